"""A module's converge(module, journal) run as kernel_settings runs each part: with a journal that only
collects the steps, so a test can check that planning wrote nothing before any step is carried out."""


class _Collecting:
    def __init__(self):
        self.steps = []

    def apply(self, steps):
        self.steps.extend(steps)


class _PlainModule:
    _diff, check_mode = True, False

    def __init__(self, params):
        self.params, self.warnings = params, []

    def warn(self, message):
        self.warnings.append(message)


def plan(converge, params):
    """(result, steps) of converge run with params and a collecting journal."""
    journal = _Collecting()
    return converge(_PlainModule(params), journal), journal.steps
