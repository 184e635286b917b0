import errno
import os
import struct

import pytest

from ansible_collections.cpuinfer.llm.plugins.module_utils import _perf
from kernel_tree import write_tree


def _host(tmp_path, online="0-2"):
    write_tree(tmp_path, {"/sys/devices/system/cpu/online": online + "\n"})
    (tmp_path / "sys/fs/cgroup/inference.slice").mkdir(parents=True)
    return str(tmp_path)


class FakeCounters:
    """perf_event_open stand-in: each opened fd is a pipe holding one 8-byte count."""

    def __init__(self, counts, fail_at=None, err=errno.EACCES):
        self.counts, self.fail_at, self.err, self.opened = counts, fail_at, err, []

    def __call__(self, event, group_fd, cpu):
        if self.fail_at == (event, cpu):
            raise OSError(self.err, os.strerror(self.err))
        read_end, write_end = os.pipe()
        os.write(write_end, struct.pack("=Q", self.counts[event][cpu]))
        os.close(write_end)
        self.opened.append((event, cpu, read_end))
        return read_end


def test_one_event_per_online_cpu_summed(tmp_path):
    fake = FakeCounters({"instructions": {0: 5, 1: 7, 2: 11}, "cache_misses": {0: 1, 1: 0, 2: 2}})
    counters = _perf.CgroupCounters(_host(tmp_path), "inference.slice", open_event=fake).open()
    assert sorted((event, cpu) for event, cpu, dummy in fake.opened) == [(e, c) for e in ("cache_misses", "instructions") for c in (0, 1, 2)]
    assert counters.read() == {"instructions": 23, "cache_misses": 3}
    counters.close()
    assert counters.fds == {}


REFUSALS = [(errno.EACCES, "CAP_PERFMON"), (errno.ENOENT, "no such hardware counter"), (errno.EBUSY, "perf_event_open: ")]


@pytest.mark.parametrize("err, reason", REFUSALS)
def test_a_refusal_closes_what_was_opened_and_says_why(tmp_path, err, reason):
    fake = FakeCounters({"instructions": {0: 1, 1: 1}}, fail_at=("instructions", 1), err=err)
    counters = _perf.CgroupCounters(_host(tmp_path, "0-1"), "inference.slice", events=("instructions",), open_event=fake)
    with pytest.raises(_perf.PerfError, match=reason):
        counters.open()
    assert counters.fds == {}
    with pytest.raises(OSError):
        os.fstat(fake.opened[0][2])  # the fd opened for CPU 0 was closed
