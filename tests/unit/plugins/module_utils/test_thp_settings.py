"""_thp_settings.converge hands every write to the journal it is given: kernel_settings plans
all its parts with a journal that only collects, then writes; nothing may be written before that."""

from ansible_collections.cpuinfer.llm.plugins.module_utils import _thp, _thp_settings

from kernel_tree import FakeThpKernel, snapshot

ARGS = {"enabled": "madvise", "defrag": "never", "khugepaged": None, "persistent": True}


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


def test_planning_writes_nothing_and_the_planned_steps_make_the_change(tmp_path, monkeypatch):
    FakeThpKernel(tmp_path).install(monkeypatch)
    before, journal = snapshot(tmp_path), Collecting()
    result = _thp_settings.converge(Module(dict(ARGS, root=str(tmp_path))), journal)
    assert result["changed"] and journal.steps and snapshot(tmp_path) == before
    for step in journal.steps:
        step.do()
    assert _thp.read_state(str(tmp_path))[0]["enabled"] == "madvise"
    again = Collecting()
    assert not _thp_settings.converge(Module(dict(ARGS, root=str(tmp_path))), again)["changed"]
    assert again.steps == []
