"""_sysctl_settings.converge hands every write to the journal it is given: kernel_settings plans
all its parts with a journal that only collects, then writes; nothing may be written before that."""

from ansible_collections.cpuinfer.llm.plugins.module_utils import _sysctl_settings

from kernel_tree import snapshot, write_tree

ARGS = {"values": {"kernel.sched_rt_runtime_us": 950000}, "dropin": "/etc/sysctl.d/90-cpuinfer-tuning.conf", "missing": "skip", "persistent": True}


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
    write_tree(tmp_path, {"/proc/sys/kernel/sched_rt_runtime_us": "-1\\n"})
    before, journal = snapshot(tmp_path), Collecting()
    result = _sysctl_settings.converge(Module(dict(ARGS, root=str(tmp_path))), journal)
    assert result["changed"] and journal.steps and snapshot(tmp_path) == before
    for step in journal.steps:
        step.do()
    assert (tmp_path / "proc/sys/kernel/sched_rt_runtime_us").read_text().strip() == "950000"
    again = Collecting()
    assert not _sysctl_settings.converge(Module(dict(ARGS, root=str(tmp_path))), again)["changed"]
    assert again.steps == []
