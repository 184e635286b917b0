"""A module's converge(module, journal) run as kernel_settings runs each part (its own _Part view of the
module and its _Planned journal, which only collects the steps), so a test can check that planning wrote
nothing before any step is carried out."""

from ansible_collections.cpuinfer.llm.plugins.modules.kernel_settings import _Part, _Planned


class _PlainModule:
    _diff, check_mode = True, False

    def __init__(self):
        self.warnings = []

    def warn(self, message):
        self.warnings.append(message)


def plan(converge, params):
    """(result, steps) of converge run with params and a collecting journal."""
    journal = _Planned()
    return converge(_Part(_PlainModule(), "part", params), journal), journal.steps
