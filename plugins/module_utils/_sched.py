# -*- coding: utf-8 -*-
# Copyright: cpuinfer.llm contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Scheduling policy per thread through sched_getattr(2)/sched_setattr(2), which Python's os
module lacks (SCHED_DEADLINE needs them), and the procfs side: threads, names, unit processes."""

from __future__ import absolute_import, division, print_function

import collections
import ctypes
import errno
import os
import platform
import re

from ansible_collections.cpuinfer.llm.plugins.module_utils import _cgroupfs
from ansible_collections.cpuinfer.llm.plugins.module_utils._knobs import KnobError, knob_exists, knob_path, read_knob

__metaclass__ = type

# (sched_setattr, sched_getattr) numbers per machine
SYSCALL_NUMBERS = {"x86_64": (314, 315), "aarch64": (274, 275)}
POLICY_NUMBERS = {"other": 0, "fifo": 1, "rr": 2, "batch": 3, "idle": 5, "deadline": 6}
POLICY_NAMES = dict((number, name) for name, number in POLICY_NUMBERS.items())
SCHED_FLAG_RESET_ON_FORK = 0x01
_DURATION = re.compile(r"^\s*(\d+)\s*(ns|us|ms|s)?\s*$")
_NS_PER = {None: 1, "ns": 1, "us": 1000, "ms": 1000000, "s": 1000000000}

Attrs = collections.namedtuple("Attrs", "policy priority nice runtime deadline period reset_on_fork")


class SchedError(Exception):
    """A request the kernel refused, with why."""


class _SchedAttr(ctypes.Structure):
    _fields_ = [
        ("size", ctypes.c_uint32),
        ("sched_policy", ctypes.c_uint32),
        ("sched_flags", ctypes.c_uint64),
        ("sched_nice", ctypes.c_int32),
        ("sched_priority", ctypes.c_uint32),
        ("sched_runtime", ctypes.c_uint64),
        ("sched_deadline", ctypes.c_uint64),
        ("sched_period", ctypes.c_uint64),
    ]


def parse_duration_ns(value):
    """'10ms' -> 10000000; '500us'; '2s'; a bare number is nanoseconds."""
    match = _DURATION.match(str(value))
    if not match:
        raise ValueError("%r is not a duration: use ns, or a number with ns/us/ms/s" % (value,))
    return int(match.group(1)) * _NS_PER[match.group(2)]


def explain(exc, policy):
    """Turn the kernel's errno into what an operator needs to know."""
    if exc.errno == errno.EBUSY and policy == "deadline":
        return ("admission control refused it: the SCHED_DEADLINE bandwidth on these CPUs would exceed "
                "kernel.sched_rt_runtime_us / sched_rt_period_us (lower runtime or raise period)")
    if exc.errno == errno.EPERM and policy == "deadline":
        return ("refused (EPERM): SCHED_DEADLINE needs CAP_SYS_NICE and a CPU affinity that spans the task's "
                "whole root domain (pinned tasks are refused; use cpuset partitions instead)")
    if exc.errno == errno.EPERM and policy in ("fifo", "rr"):
        return ("refused (EPERM): needs CAP_SYS_NICE; under RT group scheduling (CONFIG_RT_GROUP_SCHED) the "
                "task's cgroup also needs an RT budget (cpu.rt_runtime_us)")
    if exc.errno == errno.ESRCH:
        return "the thread exited"
    return os.strerror(exc.errno)


class Syscalls:
    """The two system calls; a test passes a fake with the same get/set."""

    def __init__(self, machine=None):
        machine = machine or platform.machine()
        if machine not in SYSCALL_NUMBERS:
            raise SchedError("sched_setattr numbers are not known for %s" % machine)
        self._set_nr, self._get_nr = SYSCALL_NUMBERS[machine]
        self._libc = ctypes.CDLL(None, use_errno=True)

    def get(self, tid):
        attr = _SchedAttr()
        if self._libc.syscall(self._get_nr, tid, ctypes.byref(attr), ctypes.sizeof(_SchedAttr), 0) != 0:
            err = ctypes.get_errno()
            raise OSError(err, os.strerror(err))
        policy = POLICY_NAMES.get(attr.sched_policy, str(attr.sched_policy))
        return Attrs(policy, attr.sched_priority, attr.sched_nice, attr.sched_runtime, attr.sched_deadline,
                     attr.sched_period, bool(attr.sched_flags & SCHED_FLAG_RESET_ON_FORK))

    def set(self, tid, attrs):
        attr = _SchedAttr(
            size=ctypes.sizeof(_SchedAttr), sched_policy=POLICY_NUMBERS[attrs.policy],
            sched_flags=SCHED_FLAG_RESET_ON_FORK if attrs.reset_on_fork else 0, sched_nice=attrs.nice,
            sched_priority=attrs.priority, sched_runtime=attrs.runtime, sched_deadline=attrs.deadline,
            sched_period=attrs.period,
        )
        if self._libc.syscall(self._set_nr, tid, ctypes.byref(attr), 0) != 0:
            err = ctypes.get_errno()
            raise OSError(err, os.strerror(err))


def pid_exists(root, pid):
    return knob_exists(root, "/proc/%d/stat" % pid)


def threads_of(root, pid, which):
    """Thread ids of a process: all of them, or just the main thread."""
    if which == "main":
        return [pid]
    task_dir = knob_path(root, "/proc/%d/task" % pid)
    try:
        return sorted(int(name) for name in os.listdir(task_dir) if name.isdigit())
    except OSError:
        return []


def thread_name(root, pid, tid):
    relative = "/proc/%d/task/%d/comm" % (pid, tid)
    if knob_exists(root, relative):
        return read_knob(root, relative)
    return _cgroupfs.process_name(root, pid)


def pids_named(root, name):
    """Processes whose comm is exactly name (the kernel truncates comm to 15 characters)."""
    proc = knob_path(root, "/proc")
    found = []
    for entry in os.listdir(proc):
        if entry.isdigit() and _cgroupfs.process_name(root, int(entry)) == name[:15]:
            found.append(int(entry))
    return sorted(found)


def run_delay(root, pids):
    """(ns, threads): time the live threads of these processes spent runnable but waiting for a
    CPU, summed, and how many threads were read.

    /proc/PID/task/TID/schedstat is 'on-CPU ns, run-delay ns, timeslices'. Threads that exited
    take their delay with them, so the sum can fall; it is a gauge of the live threads' delay."""
    total = threads = 0
    for pid in pids:
        for tid in threads_of(root, pid, "all"):
            relative = "/proc/%d/task/%d/schedstat" % (pid, tid)
            try:
                fields = read_knob(root, relative).split()
            except KnobError:
                continue  # the thread exited between listing and reading
            if len(fields) >= 2 and fields[1].isdigit():
                total += int(fields[1])
                threads += 1
    return total, threads
