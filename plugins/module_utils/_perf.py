# -*- coding: utf-8 -*-
# Copyright: cpuinfer.llm contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Hardware counters of a cgroup through perf_event_open(2) (Python's os module lacks it).

Private to the collection. A cgroup event counts only while the group's tasks run on a CPU, so one
event is opened per online CPU with the group's directory fd as 'pid' (PERF_FLAG_PID_CGROUP) and
the counts are summed. The caller needs CAP_PERFMON (or perf_event_paranoid <= 0); virtual machines
usually expose no hardware counters at all. Either way PerfError says why, and callers report the
counters as absent.
"""

from __future__ import absolute_import, division, print_function

import ctypes
import errno
import os
import platform
import struct

from ansible_collections.cpuinfer.llm.plugins.module_utils._errors import HostError
from ansible_collections.cpuinfer.llm.plugins.module_utils._topology import online_cpus
from ansible_collections.cpuinfer.llm.plugins.module_utils._knobs import knob_path

__metaclass__ = type

SYSCALL_NUMBERS = {"x86_64": 298, "aarch64": 241}
PERF_TYPE_HARDWARE = 0
HARDWARE_EVENTS = {"instructions": 1, "cache_misses": 3}
PERF_FLAG_PID_CGROUP = 1 << 2
PERF_FLAG_FD_CLOEXEC = 1 << 3
_EXCLUDE_HV = 1 << 6
_REASONS = {
    errno.EACCES: "no permission (the service needs CAP_PERFMON, or perf_event_paranoid <= 0)",
    errno.EPERM: "no permission (the service needs CAP_PERFMON, or perf_event_paranoid <= 0)",
    errno.ENOENT: "this CPU (or hypervisor) exposes no such hardware counter",
    errno.EOPNOTSUPP: "this CPU (or hypervisor) exposes no such hardware counter",
    errno.ENODEV: "this CPU (or hypervisor) exposes no such hardware counter",
}


class PerfError(HostError):
    """Counters cannot be opened; the message is the reason to report."""


class _Attr(ctypes.Structure):
    # PERF_ATTR_SIZE_VER0: enough for counting events
    _fields_ = [("type", ctypes.c_uint32), ("size", ctypes.c_uint32), ("config", ctypes.c_uint64),
                ("sample_period", ctypes.c_uint64), ("sample_type", ctypes.c_uint64),
                ("read_format", ctypes.c_uint64), ("flags", ctypes.c_uint64), ("wakeup_events", ctypes.c_uint32),
                ("bp_type", ctypes.c_uint32), ("config1", ctypes.c_uint64)]


def _kernel_perf_event_open(event, group_fd, cpu):
    number = SYSCALL_NUMBERS.get(platform.machine())
    if number is None:
        raise OSError(errno.ENOSYS, "perf_event_open: unknown syscall number on %s" % platform.machine())
    libc = ctypes.CDLL(None, use_errno=True)
    attr = _Attr(type=PERF_TYPE_HARDWARE, size=ctypes.sizeof(_Attr), config=HARDWARE_EVENTS[event],
                 flags=_EXCLUDE_HV)
    fd = libc.syscall(number, ctypes.byref(attr), group_fd, cpu, -1, PERF_FLAG_PID_CGROUP | PERF_FLAG_FD_CLOEXEC)
    if fd < 0:
        err = ctypes.get_errno()
        raise OSError(err, os.strerror(err))
    return fd


class CgroupCounters:
    """Open counters of one cgroup; read() gives each event's total since open()."""

    def __init__(self, root, group, events=("instructions", "cache_misses"), open_event=None):
        self.root, self.group, self.events = root, group, tuple(events)
        self.open_event = open_event or _kernel_perf_event_open
        self.fds = {}

    def open(self):
        cpus = online_cpus(self.root)
        group_fd = os.open(knob_path(self.root, "/sys/fs/cgroup/" + self.group), os.O_RDONLY | os.O_DIRECTORY)
        try:
            for event in self.events:
                for cpu in sorted(cpus):
                    self.fds.setdefault(event, []).append(self.open_event(event, group_fd, cpu))
        except OSError as exc:
            self.close()
            raise PerfError(_REASONS.get(exc.errno, "perf_event_open: %s" % os.strerror(exc.errno)))
        finally:
            os.close(group_fd)
        return self

    def read(self):
        return dict((event, sum(struct.unpack("=Q", os.read(fd, 8))[0] for fd in fds))
                    for event, fds in self.fds.items())

    def close(self):
        for fds in self.fds.values():
            for fd in fds:
                os.close(fd)
        self.fds = {}
