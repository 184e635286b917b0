"""What the kernel shows after the converge, read back independently of the modules."""

import time

import pytest

WORKERS = "/sys/fs/cgroup/system.slice/cpuinfer-sandbox.service/workers"


def _read(host, name):
    return host.file("%s/%s" % (WORKERS, name)).content_string.strip()


@pytest.mark.parametrize("name,expected", [
    ("cpu.max", "20000 100000"),
    ("cpu.weight", "50"),
    ("memory.low", str(16 << 20)),
    ("memory.high", str(192 << 20)),
    ("memory.max", str(256 << 20)),
    ("memory.oom.group", "1"),
    ("cpuset.cpus", "1"),
    ("cpuset.cpus.effective", "1"),
    ("cpuset.mems", "0"),
    ("pids.max", "64"),
])
def test_limits_are_in_the_kernel(host, name, expected):
    assert _read(host, name) == expected


def test_io_limits(host):
    device = host.file("/sys/block/vda/dev").content_string.strip()
    assert "default 50" in _read(host, "io.weight")
    assert "%s rbps=max wbps=%d riops=2000 wiops=max" % (device, 20 << 20) in _read(host, "io.max")


def test_hog_runs_in_the_group_and_the_parent_has_no_processes(host):
    hog = set(host.check_output("pgrep -f '^stress-ng'").split())
    assert hog and hog <= set(_read(host, "cgroup.procs").split())
    parent = host.file("/sys/fs/cgroup/system.slice/cpuinfer-sandbox.service/cgroup.procs").content_string
    assert parent.strip() == ""


def test_hog_is_held_to_its_quota(host):
    """cpu.max 20000/100000 allows 20 % of one CPU; the measured share must stay at or under 25 %."""
    def usage_usec():
        stat = dict(line.split() for line in _read(host, "cpu.stat").splitlines())
        return int(stat["usage_usec"]), int(stat["nr_throttled"])

    start_usage, start_throttled = usage_usec()
    started = time.monotonic()
    time.sleep(10)
    end_usage, end_throttled = usage_usec()
    share = (end_usage - start_usage) / ((time.monotonic() - started) * 1e6)
    print("hog CPU share over %.1fs: %.3f" % (time.monotonic() - started, share))
    assert 0.05 < share <= 0.25
    assert end_throttled > start_throttled


def _chrt(host, unit):
    pid = host.check_output("systemctl show --property=MainPID --value %s" % unit)
    return host.check_output("chrt -p %s" % pid)


def test_fifo_10(host):
    out = _chrt(host, "cpuinfer-sleeper-fifo.service")
    assert "SCHED_FIFO" in out and "priority: 10" in out


def test_deadline_2_10_10_ms(host):
    out = _chrt(host, "cpuinfer-sleeper-deadline.service")
    assert "SCHED_DEADLINE" in out
    assert "2000000/10000000/10000000" in out
