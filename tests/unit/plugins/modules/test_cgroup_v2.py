from pathlib import Path

import pytest

from ansible_collections.cpuinfer.llm.plugins.modules import cgroup_v2

from fake_cgroup import DELEGATED, MOUNT, FakeCgroupKernel
from kernel_tree import snapshot

GROUP = DELEGATED + "/model-a"


@pytest.fixture
def kernel(tmp_path, monkeypatch):
    fake = FakeCgroupKernel(tmp_path, cpus="0-3", nodes="0").install(monkeypatch)
    fake.delegated_unit(pids=())
    return fake


def cg(kernel, group, name):
    return (Path(kernel.root) / MOUNT / group / name).read_text().strip()


def run(run_module, kernel, check=False, diff=False, **args):
    return run_module(cgroup_v2, dict(args, root=str(kernel.root)), check=check, diff=diff)


FULL = dict(path=GROUP, cpu_weight=400, cpu_max="20000 100000", memory_low="64M", memory_high="768M",
            memory_max="1G", io_weight={"default": 200, "8:0": 300}, io_max={"8:0": {"rbps": "10M", "wiops": 100}},
            cpuset_cpus="1-2", cpuset_mems="0", pids_max="128")


def test_creates_group_enables_controllers_and_sets_limits(run_module, kernel):
    failed, result = run(run_module, kernel, **FULL)
    assert not failed, result
    assert result["changed"]
    assert set(cg(kernel, DELEGATED, "cgroup.subtree_control").split()) == {"cpu", "cpuset", "io", "memory", "pids"}
    assert cg(kernel, GROUP, "cpu.weight") == "400"
    assert cg(kernel, GROUP, "cpu.max") == "20000 100000"
    assert cg(kernel, GROUP, "memory.max") == str(1 << 30)
    assert cg(kernel, GROUP, "memory.high") == str(768 << 20)
    assert cg(kernel, GROUP, "io.weight").splitlines() == ["8:0 300", "default 200"]
    assert cg(kernel, GROUP, "io.max") == "8:0 rbps=10485760 wbps=max riops=max wiops=100"
    assert cg(kernel, GROUP, "cpuset.cpus") == "1-2"
    assert cg(kernel, GROUP, "pids.max") == "128"
    assert result["after"]["memory.max"] == str(1 << 30) and result["before"]["memory.max"] is None
    assert result["signals"]["cpu_stat"]["nr_throttled"] == 0
    assert result["signals"]["pressure_avg10"]["memory"]["some"] == 1.5


def test_second_run_is_unchanged(run_module, kernel):
    run(run_module, kernel, **FULL)
    failed, result = run(run_module, kernel, **FULL)
    assert not failed and not result["changed"], result


def test_equivalent_spellings_are_not_a_change(run_module, kernel):
    run(run_module, kernel, **FULL)
    same = {**FULL, "memory_max": "1024M", "memory_high": "805306368", "cpuset_cpus": "2,1"}
    assert not run(run_module, kernel, **same)[1]["changed"]


def test_cpu_max_max_keeps_the_period(run_module, kernel):
    run(run_module, kernel, path=GROUP, cpu_max="50000 200000")
    failed, result = run(run_module, kernel, path=GROUP, cpu_max="max")
    assert not failed and result["after"]["cpu.max"] == "max 200000"
    assert cg(kernel, GROUP, "cpu.max") == "max 200000"
    assert not run(run_module, kernel, path=GROUP, cpu_max="max")[1]["changed"]


def test_check_mode_writes_nothing(run_module, kernel):
    before = snapshot(kernel.root)
    failed, result = run(run_module, kernel, check=True, diff=True, **FULL)
    assert not failed and result["changed"]
    assert snapshot(kernel.root) == before
    assert not (Path(kernel.root) / MOUNT / GROUP).exists()
    assert "cpu.weight = 400" in result["diff"]["after"]


def test_procs_move_into_a_leaf_and_controllers_then_work(run_module, kernel):
    kernel.spawn(4242, DELEGATED)  # the unit's main process, where systemd started it
    assert run(run_module, kernel, **FULL)[0], "controllers below a group with processes must fail"
    failed, result = run(run_module, kernel, path=DELEGATED + "/supervisor", procs=[4242])
    assert not failed and result["changed"]
    assert cg(kernel, DELEGATED + "/supervisor", "cgroup.procs") == "4242"
    assert (Path(kernel.root) / "proc/4242/cgroup").read_text() == "0::/%s/supervisor\n" % DELEGATED
    assert not run(run_module, kernel, **FULL)[0]
    assert not run(run_module, kernel, path=DELEGATED + "/supervisor", procs=[4242])[1]["changed"]


def test_internal_process_rule_is_explained_and_nothing_stays_written(run_module, kernel):
    run(run_module, kernel, path=GROUP)  # create the group, no controllers yet
    kernel.spawn(777, GROUP)
    before = snapshot(kernel.root)
    failed, result = run(run_module, kernel, path=GROUP + "/child", cpu_weight=50)
    assert failed and "busy" in result["msg"].lower() and "put back" in result["msg"]
    assert snapshot(kernel.root) == before


@pytest.mark.parametrize("args,message", [
    (dict(cpu_weight=0), "cpu_weight must be in 1..10000"),
    (dict(cpu_weight=10001), "cpu_weight must be in 1..10000"),
    (dict(cpu_max="50000"), "cpu_max '50000' is malformed"),
    (dict(cpu_max="500 100000"), "quota 500 is below 1000"),
    (dict(cpu_max="50000 2000000"), "period 2000000 is outside"),
    (dict(memory_high="2G", memory_max="1G"), "memory_high (2G) must not exceed memory_max (1G)"),
    (dict(memory_min="1G", memory_low="512M"), "memory_min (1G) must not exceed memory_low (512M)"),
    (dict(memory_max="8X"), "unknown size '8X'"),
    (dict(cpuset_cpus="999"), "CPUs 999 not online"),
    (dict(cpuset_cpus="3-1"), "reversed range"),
    (dict(cpuset_mems="1"), "NUMA nodes 1 not online"),
    (dict(io_weight={"9:9": 100}), "no block device 9:9"),
    (dict(io_weight={"default": 0}), "io_weight[default] must be an integer in 1..10000"),
    (dict(io_max={"8:0": {"rbytes": 1}}), "io_max[8:0] must be a dict of rbps, wbps, riops, wiops"),
    (dict(pids_max="lots"), "pids_max must be"),
    (dict(procs=[999999]), "no process 999999"),
])
def test_bad_input_is_refused_with_nothing_written(run_module, kernel, args, message):
    before = snapshot(kernel.root)
    failed, result = run(run_module, kernel, **dict(args, path=GROUP))
    assert failed, result
    assert message in result["msg"]
    assert result["msg"].startswith("invalid request, nothing written")
    assert snapshot(kernel.root) == before


def test_every_problem_is_reported_at_once(run_module, kernel):
    failed, result = run(run_module, kernel, path=GROUP, cpu_weight=0, memory_max="8X", cpuset_cpus="999")
    assert failed
    for part in ("cpu_weight", "memory_max", "cpuset_cpus"):
        assert part in result["msg"]


@pytest.mark.parametrize("path", ["/sys/fs/cgroup/x", "a/../b", "a//b", "", "system.slice/./x"])
def test_path_escapes_are_refused(run_module, kernel, path):
    failed, result = run(run_module, kernel, path=path, cpu_weight=10)
    assert failed and ("relative" in result["msg"] or "component" in result["msg"])


def test_paths_outside_a_delegated_unit_are_refused(run_module, kernel):
    before = snapshot(kernel.root)
    failed, result = run(run_module, kernel, path="system.slice/other.service/x", cpu_weight=10)
    assert failed and "Delegate=yes" in result["msg"] and "MemoryMax=" in result["msg"]
    failed, result = run(run_module, kernel, path=DELEGATED, cpu_weight=10)  # the unit's own files are systemd's
    assert failed and "Delegate=yes" in result["msg"]
    assert snapshot(kernel.root) == before


def test_refused_write_undoes_the_whole_run(run_module, kernel):
    kernel.refuse["%s/%s/memory.max" % (MOUNT, GROUP)] = "Device or resource busy"
    before = snapshot(kernel.root)
    failed, result = run(run_module, kernel, **FULL)
    assert failed and "memory.max" in result["msg"] and "put back" in result["msg"]
    assert snapshot(kernel.root) == before


def test_partition_refusal_returns_the_kernels_reason(run_module, kernel):
    run(run_module, kernel, path=GROUP, controllers=["cpuset"])
    failed, result = run(run_module, kernel, path=GROUP, cpuset_partition="root")
    assert failed and "not exclusive" in result["msg"]
    assert cg(kernel, GROUP, "cpuset.cpus.partition") == "member"


def test_absent_refuses_while_processes_remain_and_names_them(run_module, kernel):
    run(run_module, kernel, path=GROUP + "/leaf")
    kernel.spawn(5150, GROUP + "/leaf", comm="llama-server")
    failed, result = run(run_module, kernel, path=GROUP, state="absent")
    assert failed and "5150 (llama-server)" in result["msg"]
    assert (Path(kernel.root) / MOUNT / GROUP / "leaf").is_dir()


def test_absent_removes_empty_groups_deepest_first(run_module, kernel):
    run(run_module, kernel, path=GROUP + "/leaf/deeper")
    failed, result = run(run_module, kernel, path=GROUP, state="absent")
    assert not failed and result["removed"] == [GROUP + "/leaf/deeper", GROUP + "/leaf", GROUP]
    assert not (Path(kernel.root) / MOUNT / GROUP).exists()
    assert not run(run_module, kernel, path=GROUP, state="absent")[1]["changed"]
