"""_thp_settings.converge hands every write to the journal it is given: kernel_settings plans
all its parts with a journal that only collects, then writes; nothing may be written before that."""

from ansible_collections.cpuinfer.llm.plugins.module_utils import _thp, _thp_settings

from kernel_tree import FakeThpKernel, snapshot
from planning import plan

ARGS = {"enabled": "madvise", "defrag": "never", "khugepaged": None, "persistent": True}


def test_planning_writes_nothing_and_the_planned_steps_make_the_change(tmp_path, monkeypatch):
    FakeThpKernel(tmp_path).install(monkeypatch)
    before = snapshot(tmp_path)
    result, steps = plan(_thp_settings.converge, dict(ARGS, root=str(tmp_path)))
    assert result["changed"] and steps and snapshot(tmp_path) == before
    for step in steps:
        step.do()
    assert _thp.read_state(str(tmp_path))[0]["enabled"] == "madvise"
    again, steps = plan(_thp_settings.converge, dict(ARGS, root=str(tmp_path)))
    assert not again["changed"] and steps == []
