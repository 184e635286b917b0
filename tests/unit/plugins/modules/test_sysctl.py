import pytest

from ansible_collections.cpuinfer.llm.plugins.module_utils import _knobs
from ansible_collections.cpuinfer.llm.plugins.modules import sysctl

from kernel_tree import snapshot, write_tree

DROPIN = "etc/sysctl.d/90-cpuinfer-tuning.conf"
VALUES = {"kernel.sched_rt_runtime_us": 950000, "kernel.numa_balancing": 0}


@pytest.fixture
def root(tmp_path):
    write_tree(tmp_path, {
        "/proc/sys/kernel/sched_rt_runtime_us": "950000\n",
        "/proc/sys/kernel/sched_rt_period_us": "1000000\n",
        "/proc/sys/net/ipv4/ip_local_port_range": "32768\t60999\n",
    })
    return tmp_path


def test_sets_what_the_kernel_has_and_reports_what_it_lacks(root, run_module):
    failed, result = run_module(sysctl, {"values": dict(VALUES, **{"kernel.sched_rt_period_us": 1000001}),
                                         "root": str(root)})
    assert not failed, result
    assert result["missing"] == ["kernel.numa_balancing"]
    assert (root / "proc/sys/kernel/sched_rt_period_us").read_text() == "1000001"
    dropin = (root / DROPIN).read_text()
    assert "kernel.sched_rt_period_us = 1000001\nkernel.sched_rt_runtime_us = 950000\n" in dropin
    assert "numa_balancing = " not in dropin and "left out: kernel.numa_balancing" in dropin


def test_a_second_run_changes_nothing_and_tabs_compare_as_spaces(root, run_module):
    args = {"values": {"net.ipv4.ip_local_port_range": "32768 60999", "kernel.sched_rt_runtime_us": "950000"},
            "root": str(root)}
    failed, result = run_module(sysctl, args)
    assert not failed and result["changed"]  # the drop-in is new, the running values already match
    assert result["before"] == result["after"]
    failed, result = run_module(sysctl, args)
    assert not failed and not result["changed"], result


def test_check_mode_writes_nothing(root, run_module):
    before = snapshot(root)
    failed, result = run_module(sysctl, {"values": {"kernel.sched_rt_runtime_us": -1}, "root": str(root)},
                                check=True, diff=True)
    assert not failed and result["changed"] and result["after"]["kernel.sched_rt_runtime_us"] == "-1"
    assert snapshot(root) == before
    assert "kernel.sched_rt_runtime_us = -1" in result["diff"][1]["after"]


def test_missing_fail_refuses_before_any_write(root, run_module):
    failed, result = run_module(sysctl, {"values": VALUES, "missing": "fail", "root": str(root)})
    assert failed and "no kernel.numa_balancing" in result["msg"] and "nothing written" in result["msg"]
    assert not (root / DROPIN).exists()


@pytest.mark.parametrize("values, message", [
    ({"kernel/numa": 1}, "not a sysctl key"),
    ({"kernel.perf_event_paranoid": 2}, "cpuinfer.llm.perf_paranoid"),
    ({"kernel.sched_rt_runtime_us": True}, "not True"),
    ({"kernel.sched_rt_runtime_us": "1\n2"}, "one-line"),
    ({"kernel.sched_rt_runtime_us": ""}, "one-line"),
])
def test_bad_requests_are_refused_whole(root, run_module, values, message):
    before = snapshot(root)
    failed, result = run_module(sysctl, {"values": dict(values, **{"kernel.sched_rt_period_us": 5}), "root": str(root)})
    assert failed and message in result["msg"], result
    assert snapshot(root) == before


def test_a_refused_value_puts_back_what_was_written(root, run_module, monkeypatch):
    real = _knobs.write_knob

    def refuse_runtime(root_, relative, value):
        if relative.endswith("sched_rt_runtime_us"):
            raise _knobs.KnobError("cannot write %s: Invalid argument" % relative)
        return real(root_, relative, value)

    monkeypatch.setattr(_knobs, "write_knob", refuse_runtime)
    failed, result = run_module(sysctl, {"values": {"kernel.sched_rt_period_us": 5, "kernel.sched_rt_runtime_us": 4},
                                         "root": str(root)})
    assert failed and "put back" in result["msg"], result
    assert (root / "proc/sys/kernel/sched_rt_period_us").read_text().strip() == "1000000"
    assert not (root / DROPIN).exists()


def test_not_persistent_sets_the_running_value_and_leaves_the_dropin_alone(root, run_module):
    (root / "etc/sysctl.d").mkdir(parents=True)
    (root / DROPIN).write_text("kernel.sched_rt_runtime_us = -1\n")
    failed, result = run_module(sysctl, {"values": {"kernel.sched_rt_runtime_us": 900000}, "persistent": False,
                                         "root": str(root)}, diff=True)
    assert not failed and result["changed"], result
    assert (root / "proc/sys/kernel/sched_rt_runtime_us").read_text() == "900000"
    assert (root / DROPIN).read_text() == "kernel.sched_rt_runtime_us = -1\n"
    assert "persistent_file" not in result and len(result["diff"]) == 1
    failed, result = run_module(sysctl, {"values": {"kernel.sched_rt_runtime_us": 900000}, "persistent": False,
                                         "root": str(root)})
    assert not failed and not result["changed"]
