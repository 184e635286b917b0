"""_sysctl_settings.converge hands every write to the journal it is given: kernel_settings plans
all its parts with a journal that only collects, then writes; nothing may be written before that."""

from ansible_collections.cpuinfer.llm.plugins.module_utils import _sysctl_settings

from kernel_tree import snapshot, write_tree
from planning import plan

ARGS = {"values": {"kernel.sched_rt_runtime_us": 950000}, "dropin": "/etc/sysctl.d/90-cpuinfer-tuning.conf", "missing": "skip", "persistent": True}


def test_planning_writes_nothing_and_the_planned_steps_make_the_change(tmp_path):
    write_tree(tmp_path, {"/proc/sys/kernel/sched_rt_runtime_us": "-1\n"})
    before = snapshot(tmp_path)
    result, steps = plan(_sysctl_settings.converge, dict(ARGS, root=str(tmp_path)))
    assert result["changed"] and steps and snapshot(tmp_path) == before
    for step in steps:
        step.do()
    assert (tmp_path / "proc/sys/kernel/sched_rt_runtime_us").read_text().strip() == "950000"
    again, steps = plan(_sysctl_settings.converge, dict(ARGS, root=str(tmp_path)))
    assert not again["changed"] and steps == []
