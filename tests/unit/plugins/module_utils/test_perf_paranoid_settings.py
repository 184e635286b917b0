"""_perf_paranoid_settings.converge hands every write to the journal it is given: kernel_settings plans
all its parts with a journal that only collects, then writes; nothing may be written before that."""

from ansible_collections.cpuinfer.llm.plugins.module_utils import _perf_paranoid_settings

from kernel_tree import perf_tree, snapshot

ARGS = {"level": 2, "state": "present", "allow_unrestricted": False, "persistent": True}


class Collecting:
    def __init__(self):
        self.steps = []

    def apply(self, steps):
        self.steps.extend(steps)


class Module:
    _diff, check_mode = True, False

    def __init__(self, params):
        self.params, self.warnings = params, []

    def warn(self, message):
        self.warnings.append(message)


def test_planning_writes_nothing_and_the_planned_steps_make_the_change(tmp_path):
    perf_tree(tmp_path, level=3)
    before, journal = snapshot(tmp_path), Collecting()
    result = _perf_paranoid_settings.converge(Module(dict(ARGS, root=str(tmp_path))), journal)
    assert result["changed"] and journal.steps and snapshot(tmp_path) == before
    for step in journal.steps:
        step.do()
    assert (tmp_path / "proc/sys/kernel/perf_event_paranoid").read_text().strip() == "2"
    again = Collecting()
    assert not _perf_paranoid_settings.converge(Module(dict(ARGS, root=str(tmp_path))), again)["changed"]
    assert again.steps == []
