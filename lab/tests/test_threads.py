"""QEMU's threads: names and CPU time from /proc, the pinning plan, affinity applied, CPU used."""

import os

import pytest

from cpuinfer_lab import threads

TICKS = os.sysconf("SC_CLK_TCK")


def fake_process(proc, pid, tasks):
    """tasks: [(tid, comm, utime_ticks, stime_ticks)] as /proc/PID/task/TID/{comm,stat}."""
    for tid, comm, utime, stime in tasks:
        task = proc / str(pid) / "task" / str(tid)
        task.mkdir(parents=True)
        (task / "comm").write_text(comm + "\n")
        # fields after "(comm)": state ppid pgrp session tty tpgid flags minflt cminflt majflt cmajflt utime stime ...
        (task / "stat").write_text("%d (%s) S 1 1 1 0 -1 0 0 0 0 0 %d %d 0 0 20 0 4 0\n" % (tid, comm, utime, stime))


def test_threads_reads_names_and_cpu_time(tmp_path):
    fake_process(tmp_path, 10, [(10, "qemu-system-x86", TICKS, 0), (12, "CPU 0/TCG", 3 * TICKS, TICKS),
                                (13, "CPU 1/TCG", 0, 0), (11, "call_rcu", 0, TICKS // 2)])
    found = threads.threads(10, str(tmp_path))
    assert [(t["tid"], t["name"]) for t in found] == [(10, "qemu-system-x86"), (11, "call_rcu"), (12, "CPU 0/TCG"),
                                                      (13, "CPU 1/TCG")]
    assert found[2]["cpu_seconds"] == 4.0


def test_vcpus_get_one_host_cpu_each_and_the_rest_the_housekeeping_cpu(tmp_path):
    fake_process(tmp_path, 10, [(10, "qemu-system-x86", 0, 0), (11, "call_rcu", 0, 0), (12, "CPU 0/TCG", 0, 0),
                                (13, "CPU 1/TCG", 0, 0), (14, "worker", 0, 0)])
    plan = threads.pinning_plan(threads.threads(10, str(tmp_path)), [0, 1], [0])
    assert {entry["name"]: entry["cpus"] for entry in plan.values()} == {
        "qemu-system-x86": [0], "call_rcu": [0], "CPU 0/TCG": [0], "CPU 1/TCG": [1], "worker": [0]}
    calls = []

    def setaffinity(tid, cpus):
        if tid == 14:
            raise ProcessLookupError(tid)  # a worker that ended meanwhile
        calls.append((tid, cpus))
    applied = threads.apply(plan, setaffinity)
    assert (13, [1]) in calls and len(calls) == 4 and "worker" not in applied and applied["CPU 1/TCG"] == [1]


def test_unnamed_threads_are_refused(tmp_path):
    fake_process(tmp_path, 10, [(10, "qemu-system-x86", 0, 0), (11, "qemu-system-x86", 0, 0)])
    with pytest.raises(ValueError, match="debug-threads=on"):
        threads.pinning_plan(threads.threads(10, str(tmp_path)), [0, 1], [0])


def test_cpu_used_between_two_readings_sums_threads_of_one_name():
    before = [{"tid": 1, "name": "CPU 0/TCG", "cpu_seconds": 1.0}, {"tid": 2, "name": "worker", "cpu_seconds": 0.5}]
    after = [{"tid": 1, "name": "CPU 0/TCG", "cpu_seconds": 3.5}, {"tid": 2, "name": "worker", "cpu_seconds": 0.75},
             {"tid": 3, "name": "worker", "cpu_seconds": 0.25}]
    assert threads.cpu_used(before, after) == {"CPU 0/TCG": 2.5, "worker": 0.5}


def test_vms_started_together_begin_on_different_host_cpus(tmp_path):
    assert threads.rotated([0, 1], 0) == [0, 1]
    assert threads.rotated([0, 1], 1) == [1, 0]
    assert threads.rotated([0, 1], 2) == [0, 1]
    fake_process(tmp_path, 10, [(10, "qemu-system-x86", 0, 0), (12, "CPU 0/TCG", 0, 0)])
    second_vm = threads.rotated([0, 1], 1)
    plan = threads.pinning_plan(threads.threads(10, str(tmp_path)), second_vm, second_vm[:1])
    assert {entry["name"]: entry["cpus"] for entry in plan.values()} == {"qemu-system-x86": [1], "CPU 0/TCG": [1]}
