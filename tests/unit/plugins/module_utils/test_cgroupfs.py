import os

import pytest

from ansible_collections.cpuinfer.llm.plugins.module_utils import _cgroupfs
from fake_cgroup import DELEGATED, FakeCgroupKernel
from kernel_tree import write_tree


@pytest.mark.parametrize("mounts, version", [
    ("cgroup2 /sys/fs/cgroup cgroup2 rw 0 0\n", 2),
    ("tmpfs /sys/fs/cgroup tmpfs ro 0 0\ncgroup2 /sys/fs/cgroup/unified cgroup2 rw 0 0\ncgroup /sys/fs/cgroup/cpu cgroup rw 0 0\n", "hybrid"),
    ("cgroup /sys/fs/cgroup/memory cgroup rw,memory 0 0\n", 1),
    ("proc /proc proc rw 0 0\n", None),
])
def test_the_hierarchy_version_from_proc_mounts(tmp_path, mounts, version):
    write_tree(tmp_path, {"/proc/mounts": mounts})
    assert _cgroupfs.hierarchy_version(str(tmp_path)) == version


@pytest.mark.parametrize("path", ["", "/system.slice", "a//b", "a/../b", "./a", "a/."])
def test_paths_outside_the_mount_are_refused(path):
    with pytest.raises(_cgroupfs.CgroupError):
        _cgroupfs.group_relative(path)


def test_paths_and_ancestors():
    assert _cgroupfs.group_relative("system.slice/x.service") == "/sys/fs/cgroup/system.slice/x.service"
    assert _cgroupfs.ancestors("a/b/c") == ["", "a", "a/b"]
    assert _cgroupfs.file_relative("", "cgroup.procs") == "/sys/fs/cgroup/cgroup.procs"


def test_groups_processes_and_delegation(tmp_path, monkeypatch):
    kernel = FakeCgroupKernel(tmp_path).install(monkeypatch)
    root = str(tmp_path)
    kernel.delegated_unit(pids=(4242,))
    _cgroupfs.make_group(root, DELEGATED + "/work")
    kernel.spawn(4343, DELEGATED + "/work")
    assert _cgroupfs.available_controllers(root) == ["cpu", "cpuset", "io", "memory", "pids"]
    assert _cgroupfs.child_groups(root, DELEGATED) == ["work"]
    assert _cgroupfs.processes_below(root, "system.slice") == {DELEGATED: [4242], DELEGATED + "/work": [4343]}
    assert _cgroupfs.unit_group(root, "app.service") == DELEGATED
    assert _cgroupfs.unit_pids(root, "app.service") == [4242, 4343]
    assert _cgroupfs.unit_group(root, "missing.service") is None
    assert _cgroupfs.delegation_base(root, DELEGATED + "/work/more") == DELEGATED
    assert _cgroupfs.delegation_base(root, "system.slice/other") is None


def test_a_process_group_and_a_host_on_cgroup_v1(tmp_path):
    write_tree(tmp_path, {"/proc/7/cgroup": "0::/system.slice/x.service\n", "/proc/8/cgroup": "4:memory:/x\n"})
    assert _cgroupfs.process_group(str(tmp_path), 7) == "system.slice/x.service"
    with pytest.raises(_cgroupfs.CgroupError, match="no cgroup v2 group"):
        _cgroupfs.process_group(str(tmp_path), 8)
    assert _cgroupfs.process_name(str(tmp_path), 7) == "?"


def test_make_and_remove_say_what_the_kernel_said(tmp_path):
    root = str(tmp_path)
    (tmp_path / "sys/fs/cgroup").mkdir(parents=True)
    _cgroupfs.make_group(root, "a")
    with pytest.raises(_cgroupfs.CgroupError, match="cannot create a: File exists"):
        _cgroupfs.make_group(root, "a")
    (tmp_path / "sys/fs/cgroup/a/b").mkdir()
    with pytest.raises(_cgroupfs.CgroupError, match="cannot remove a: Directory not empty"):
        _cgroupfs.remove_group(root, "a")


def test_keyed_files_parse():
    assert _cgroupfs.parse_flat_keyed("usage_usec 10\nnr_throttled 2\nodd\n") == {"usage_usec": 10, "nr_throttled": 2}
    assert _cgroupfs.parse_pressure("some avg10=1.50 avg60=0.00 avg300=0.00 total=7\nfull avg10=0.00 total=0\n") == {
        "some": {"avg10": 1.5, "avg60": 0.0, "avg300": 0.0, "total": 7}, "full": {"avg10": 0.0, "total": 0}}
    assert _cgroupfs.parse_nested_keyed("default 100\n8:0 200\n") == {"default": 100, "8:0": 200}
    assert _cgroupfs.parse_nested_keyed("8:0 rbps=1 wbps=max\n") == {"8:0": {"rbps": "1", "wbps": "max"}}


def test_signals_of_a_group(tmp_path, monkeypatch):
    kernel = FakeCgroupKernel(tmp_path).install(monkeypatch)
    kernel.delegated_unit()
    signals = _cgroupfs.read_signals(str(tmp_path), DELEGATED)
    assert signals["cpu_stat"] == {"usage_usec": 5, "nr_periods": 0, "nr_throttled": 0, "throttled_usec": 0}
    assert signals["memory_events"]["oom_kill"] == 0
    assert signals["pressure_avg10"]["memory"] == {"some": 1.5, "full": 0.0}


def test_a_pressure_trigger_writes_the_kernels_form(tmp_path):
    write_tree(tmp_path, {"/sys/fs/cgroup/g/memory.pressure": ""})
    fd = _cgroupfs.pressure_trigger(str(tmp_path), "g", "memory", 150000, 1000000)
    os.close(fd)
    assert (tmp_path / "sys/fs/cgroup/g/memory.pressure").read_bytes() == b"some 150000 1000000\0"


def _group_files(root, group, names):
    for name in names:
        path = root / "sys/fs/cgroup" / group / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text("0\n")


@pytest.mark.parametrize("files,release,has", [
    ({"system.slice": ["cpu.weight", "cpu.idle"]}, "5.10.0", True),         # a backport shows it
    ({"system.slice": ["cpu.weight"], "init.scope": []}, "6.1.0", False),   # the group says no, whatever the release
    ({"system.slice": ["memory.max"]}, "6.1.0-28-amd64", True),             # no cpu controller on: the release
    ({"system.slice": ["memory.max"]}, "5.10.0-153.oe2203.x86_64", False),
    ({}, None, False),
])
def test_whether_the_kernel_gives_cgroups_cpu_idle(tmp_path, files, release, has):
    for group, names in files.items():
        _group_files(tmp_path, group, names)
    if release:
        (tmp_path / "proc/sys/kernel").mkdir(parents=True)
        (tmp_path / "proc/sys/kernel/osrelease").write_text(release + "\n")
    assert _cgroupfs.kernel_has_cpu_idle(str(tmp_path)) is has
