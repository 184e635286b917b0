import gzip

import pytest

from ansible_collections.cpuinfer.llm.plugins.module_utils import _sysctl
from kernel_tree import write_tree


@pytest.mark.parametrize("key, path", [
    ("vm.swappiness", "/proc/sys/vm/swappiness"),
    ("kernel.sched_autogroup_enabled", "/proc/sys/kernel/sched_autogroup_enabled"),
    ("net.ipv4.tcp_fastopen", "/proc/sys/net/ipv4/tcp_fastopen"),
])
def test_a_key_is_its_procfs_path(key, path):
    assert _sysctl.sysctl_path(key) == path


@pytest.mark.parametrize("key", ["swappiness", "vm..swappiness", "vm/swappiness", "../etc.passwd", "VM.swappiness", ""])
def test_what_is_not_a_key_is_refused(key):
    with pytest.raises(_sysctl.SysctlError, match="not a sysctl key"):
        _sysctl.sysctl_path(key)


def test_read_int_reads_and_names_a_missing_or_garbled_knob(tmp_path):
    write_tree(tmp_path, {"/proc/sys/vm/swappiness": "60\n", "/proc/sys/vm/odd": "sixty\n"})
    assert _sysctl.read_int(str(tmp_path), "vm.swappiness") == 60
    with pytest.raises(_sysctl.SysctlError, match="this kernel has no vm.missing"):
        _sysctl.read_int(str(tmp_path), "vm.missing")
    with pytest.raises(_sysctl.SysctlError, match="'sixty', not an integer"):
        _sysctl.read_int(str(tmp_path), "vm.odd")


def test_write_value_writes_the_knob(tmp_path):
    write_tree(tmp_path, {"/proc/sys/vm/swappiness": "60\n"})
    _sysctl.write_value(str(tmp_path), "vm.swappiness", 10)
    assert (tmp_path / "proc/sys/vm/swappiness").read_text() == "10"


def test_a_dropin_round_trips_and_skips_comments():
    text = _sysctl.render_dropin("# managed\n", {"vm.swappiness": "10", "kernel.numa_balancing": "0"}, notes=["why"])
    assert text == "# managed\n# why\nkernel.numa_balancing = 0\nvm.swappiness = 10\n"
    assert _sysctl.parse_dropin(text + "; old style comment\n-vm.dirty_ratio = 5\nnot a line\n") == {
        "kernel.numa_balancing": "0", "vm.swappiness": "10", "vm.dirty_ratio": "5"}
    assert _sysctl.parse_dropin(None) == {}


def test_kernel_config_from_proc_config_gz_first(tmp_path):
    write_tree(tmp_path, {"/proc/sys/kernel/osrelease": "6.1.0\n", "/boot/config-6.1.0": "CONFIG_FROM_BOOT=y\n"})
    with gzip.open(tmp_path / "proc/config.gz", "wt") as handle:
        handle.write("CONFIG_PERF_EVENTS=y\n# CONFIG_SECURITY_PERF_EVENTS_RESTRICT is not set\n")
    assert _sysctl.kernel_config(str(tmp_path)) == {"CONFIG_PERF_EVENTS": "y", "CONFIG_SECURITY_PERF_EVENTS_RESTRICT": "n"}


def test_kernel_config_from_boot_then_none(tmp_path):
    assert _sysctl.kernel_config(str(tmp_path)) is None
    write_tree(tmp_path, {"/proc/sys/kernel/osrelease": "6.1.0\n", "/boot/config-6.1.0": "CONFIG_HZ=250\n"})
    assert _sysctl.kernel_config(str(tmp_path)) == {"CONFIG_HZ": "250"}


@pytest.mark.parametrize("path, key", [("/proc/sys/kernel/numa_balancing", "kernel.numa_balancing"),
                                       ("/proc/sys/vm/swappiness", "vm.swappiness")])
def test_a_procfs_path_is_its_key(path, key):
    assert _sysctl.sysctl_key(path) == key
    assert _sysctl.sysctl_path(key) == path


@pytest.mark.parametrize("path", ["/sys/kernel/mm/transparent_hugepage/enabled", "/proc/sys/kernel", "/proc/sys/Kernel/x"])
def test_what_is_not_a_sysctl_path_is_refused(path):
    with pytest.raises(_sysctl.SysctlError, match="not a sysctl path"):
        _sysctl.sysctl_key(path)
