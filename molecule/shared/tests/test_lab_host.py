"""A lab host is what the collection targets: systemd as PID 1 on a pure cgroup v2 hierarchy."""

import os

REQUIRED_CONTROLLERS = {"cpu", "memory", "io", "cpuset"}


def test_systemd_is_pid_1(host):
    assert host.file("/proc/1/comm").content_string.strip() == "systemd"


def test_cgroup2_is_the_only_hierarchy(host):
    mounts = host.file("/proc/mounts").content_string.splitlines()
    fs_cgroup = [line.split() for line in mounts if line.split()[1] == "/sys/fs/cgroup"]
    assert [m[2] for m in fs_cgroup] == ["cgroup2"]
    assert not any(line.split()[2] == "cgroup" for line in mounts)


def test_inference_controllers_available(host):
    available = set(host.file("/sys/fs/cgroup/cgroup.controllers").content_string.split())
    assert REQUIRED_CONTROLLERS <= available


def test_converge_left_its_state_directory(host):
    state = host.file("/var/lib/cpuinfer")
    assert state.is_directory
    assert state.user == "root"
    assert state.mode == 0o750


def test_guest_architecture_matches_the_scenario(host):
    expected = "aarch64" if os.environ.get("MOLECULE_SCENARIO_NAME") == "arm64" else "x86_64"
    assert host.system_info.arch == expected
