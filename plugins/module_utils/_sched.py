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

from ansible_collections.cpuinfer.llm.plugins.module_utils._decimal import is_decimal, is_signed_decimal
from ansible_collections.cpuinfer.llm.plugins.module_utils._errors import HostError
from ansible_collections.cpuinfer.llm.plugins.module_utils import _cgroupfs
from ansible_collections.cpuinfer.llm.plugins.module_utils._knobs import KnobError, knob_exists, knob_path, read_knob

__metaclass__ = type

# (sched_setattr, sched_getattr) numbers per machine
SYSCALL_NUMBERS = {"x86_64": (314, 315), "aarch64": (274, 275)}
POLICY_NUMBERS = {"other": 0, "fifo": 1, "rr": 2, "batch": 3, "idle": 5, "deadline": 6}
POLICY_NAMES = dict((number, name) for name, number in POLICY_NUMBERS.items())
SCHED_FLAG_RESET_ON_FORK = 0x01
_DURATION = re.compile(r"\s*([0-9]+)\s*(ns|us|ms|s)?\s*")
_NS_PER = {None: 1, "ns": 1, "us": 1000, "ms": 1000000, "s": 1000000000}

Attrs = collections.namedtuple("Attrs", "policy priority nice runtime deadline period reset_on_fork")


class SchedError(HostError):
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
    match = _DURATION.fullmatch(str(value))
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

    can_change = True

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


PF_KTHREAD = 0x00200000  # include/linux/sched.h: the task is a kernel thread


def _stat_fields(root, pid, tid=None):
    """Fields 3.. of /proc/PID[/task/TID]/stat (after the parenthesised comm, which may hold spaces)."""
    relative = "/proc/%d/stat" % pid if tid is None else "/proc/%d/task/%d/stat" % (pid, tid)
    text = read_knob(root, relative)
    return text[text.rfind(")") + 2:].split() if ")" in text else []


def is_kernel_thread(root, pid):
    """PF_KTHREAD in the flags (field 9) of /proc/PID/stat; kthreadd (2) and its children have it."""
    fields = _stat_fields(root, pid)
    return pid == 2 or (len(fields) > 6 and is_decimal(fields[6]) and bool(int(fields[6]) & PF_KTHREAD))


class ProcfsView:
    """Threads' policy, real-time priority and nice from a procfs tree under root (fields 41, 40
    and 19 of /proc/PID/task/TID/stat). With a root other than /, the module reads through this
    instead of the system calls, which would act on the real processes that happen to carry the
    same ids; it never changes anything."""

    can_change = False

    def __init__(self, root):
        self.root = root
        self._pid_of = {}

    def get(self, tid):
        pid = self._pid_of.get(tid, tid)
        try:
            fields = _stat_fields(self.root, pid, tid)
        except KnobError:
            raise OSError(errno.ESRCH, os.strerror(errno.ESRCH))
        if len(fields) < 39 or not all(is_signed_decimal(fields[i]) for i in (16, 37, 38)):
            return Attrs("other", 0, 0, 0, 0, 0, False)  # a stat too short to tell: the kernel's default
        policy = POLICY_NAMES.get(int(fields[38]), fields[38])
        return Attrs(policy, int(fields[37]), int(fields[16]), 0, 0, 0, False)

    def remember(self, pid, tid):
        self._pid_of[tid] = pid

    def set(self, tid, attrs):
        raise SchedError("not changing thread %d: with a root other than / this module only reads" % tid)


def scheduler_for(root):
    """The system calls for the real root; a read-only procfs view for any other."""
    return Syscalls() if root == "/" else ProcfsView(root)


def pid_exists(root, pid):
    return knob_exists(root, "/proc/%d/stat" % pid)


def threads_of(root, pid, which):
    """Thread ids of a process: all of them, or just the main thread."""
    if which == "main":
        return [pid]
    task_dir = knob_path(root, "/proc/%d/task" % pid)
    try:
        return sorted(int(name) for name in os.listdir(task_dir) if is_decimal(name))
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
        if is_decimal(entry) and _cgroupfs.process_name(root, int(entry)) == name[:15]:
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
            if len(fields) >= 2 and is_decimal(fields[1]):
                total += int(fields[1])
                threads += 1
    return total, threads
