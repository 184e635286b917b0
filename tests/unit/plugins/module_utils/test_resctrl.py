import fcntl
import os

import pytest

from ansible_collections.cpuinfer.llm.plugins.module_utils import _resctrl
from fake_resctrl import amd_epyc, intel_xeon
from kernel_tree import write_tree


def test_support_mount_and_info_of_a_xeon(tmp_path):
    intel_xeon(tmp_path)
    root = str(tmp_path)
    assert _resctrl.kernel_supports(root) and _resctrl.mount_options(root) == ["rw"]
    assert _resctrl.info_resources(root) == ["L3", "L3_MON", "MB"]
    info = _resctrl.read_info(root)
    assert info["L3"]["cbm_mask"] == 0xFFF and info["MB"]["bandwidth_gran"] == 10
    assert info["L3_MON"]["mon_features"] == "llc_occupancy\nmbm_total_bytes"


def test_no_resctrl_at_all(tmp_path):
    write_tree(tmp_path, {"/proc/filesystems": "nodev\tcgroup2\n", "/proc/mounts": "proc /proc proc rw 0 0\n"})
    root = str(tmp_path)
    assert not _resctrl.kernel_supports(root) and _resctrl.mount_options(root) is None
    assert _resctrl.info_resources(root) == [] and _resctrl.mon_readings(root, "") == {}
    assert not _resctrl.kernel_supports(str(tmp_path / "nothing"))


def test_schemata_parse_and_format():
    parsed = _resctrl.parse_schemata("L3:0=fff;1=0ff\n    MB:0=100;1=50\nno colon\n")
    assert parsed == {"L3": {"0": "fff", "1": "0ff"}, "MB": {"0": "100", "1": "50"}}
    assert _resctrl.format_schemata_line("L3", {"10": "f", "2": "ff"}) == "L3:2=ff;10=f\n"


def test_groups_and_their_state(tmp_path, monkeypatch):
    fake = amd_epyc(tmp_path).install(monkeypatch)
    root = str(tmp_path)
    _resctrl.make_group(root, "inference")
    fake.write(root, "/sys/fs/resctrl/inference/tasks", "4242")
    assert _resctrl.groups(root) == ["inference"]
    state = _resctrl.read_group(root, "inference")
    assert state["tasks"] == [4242] and state["schemata"]["L3"]["7"] == "ffff"
    assert _resctrl.read_group(root, "")["tasks"] == [1]
    _resctrl.remove_group(root, "inference")
    assert _resctrl.groups(root) == [] and 4242 in _resctrl.read_group(root, "")["tasks"]


def test_monitor_readings_sum_domains_and_skip_unavailable(tmp_path):
    intel_xeon(tmp_path)
    assert _resctrl.mon_readings(str(tmp_path), "") == {"llc_occupancy": 2 * 1048576}


def test_last_cmd_status_and_kernel_refusals_named(tmp_path):
    intel_xeon(tmp_path)
    root = str(tmp_path)
    assert _resctrl.last_cmd_status(root) == "ok"
    (tmp_path / "sys/fs/resctrl/info/last_cmd_status").unlink()
    assert _resctrl.last_cmd_status(root) == "ok"
    with pytest.raises(_resctrl.ResctrlError, match="cannot create resctrl group missing/x: No such file"):
        _resctrl.make_group(root, "missing/x")
    with pytest.raises(_resctrl.ResctrlError, match="cannot remove resctrl group nothing"):
        _resctrl.remove_group(root, "nothing")


def test_the_lock_is_exclusive(tmp_path):
    intel_xeon(tmp_path)
    with _resctrl.Lock(str(tmp_path)):
        other = os.open(str(tmp_path / "sys/fs/resctrl"), os.O_RDONLY | os.O_DIRECTORY)
        try:
            with pytest.raises(BlockingIOError):
                fcntl.flock(other, fcntl.LOCK_EX | fcntl.LOCK_NB)
        finally:
            os.close(other)
