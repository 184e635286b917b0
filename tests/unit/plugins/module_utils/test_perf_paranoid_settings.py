"""_perf_paranoid_settings.converge hands every write to the journal it is given: kernel_settings plans
all its parts with a journal that only collects, then writes; nothing may be written before that."""

from ansible_collections.cpuinfer.llm.plugins.module_utils import _perf_paranoid_settings

from kernel_tree import perf_tree, snapshot
from planning import plan

ARGS = {"level": 2, "state": "present", "allow_unrestricted": False, "persistent": True}


def test_planning_writes_nothing_and_the_planned_steps_make_the_change(tmp_path):
    perf_tree(tmp_path, level=3)
    before = snapshot(tmp_path)
    result, steps = plan(_perf_paranoid_settings.converge, dict(ARGS, root=str(tmp_path)))
    assert result["changed"] and steps and snapshot(tmp_path) == before
    for step in steps:
        step.do()
    assert (tmp_path / "proc/sys/kernel/perf_event_paranoid").read_text().strip() == "2"
    again, steps = plan(_perf_paranoid_settings.converge, dict(ARGS, root=str(tmp_path)))
    assert not again["changed"] and steps == []
