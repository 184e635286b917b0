import pytest

from ansible_collections.cpuinfer.llm.plugins.modules import rdt_cat

from fake_resctrl import amd_epyc, intel_xeon
from kernel_tree import snapshot, write_tree


@pytest.fixture
def xeon(tmp_path, monkeypatch):
    return intel_xeon(tmp_path).install(monkeypatch)


@pytest.fixture
def epyc(tmp_path, monkeypatch):
    return amd_epyc(tmp_path).install(monkeypatch)


def run(run_module, fake, check=False, diff=False, **args):
    return run_module(rdt_cat, dict(args, root=str(fake.root)), check=check, diff=diff)


def test_xeon_group_with_cache_split_bandwidth_and_task(run_module, xeon):
    failed, result = run(run_module, xeon, name="inference", schemata={"L3": "ff0", "MB": {"1": 50}}, pids=[4242])
    assert not failed, result
    assert result["changed"] and result["last_cmd_status"] == "ok"
    assert xeon.read("inference", "schemata") == "L3:0=ff0;1=ff0\nMB:0=100;1=50\n"
    assert xeon.read("inference", "tasks").split() == ["4242"]
    assert "4242" not in xeon.read("", "tasks").split()
    assert result["after"]["schemata"]["MB"] == {"0": "100", "1": "50"}
    assert result["monitoring"]["group"] == {}  # a new group has no mon_data in the fake


def test_second_run_is_unchanged(run_module, xeon):
    args = dict(name="inference", schemata={"L3": "ff0", "MB": 50}, pids=[4242], cpus="2-3")
    assert run(run_module, xeon, **args)[1]["changed"]
    failed, result = run(run_module, xeon, **{**args, "schemata": {"L3": "0FF0", "MB": "50"}})  # same, spelled otherwise
    assert not failed and not result["changed"], result


def test_default_group_gets_the_rest(run_module, xeon):
    failed, result = run(run_module, xeon, schemata={"L3": {"0": "00f", "1": "00f"}})
    assert not failed and result["changed"]
    assert xeon.read("", "schemata").startswith("L3:0=00f;1=00f\n")
    assert result["monitoring"]["group"] == {"llc_occupancy": 2 * 1048576}  # 'Unavailable' skipped


def test_check_mode_and_diff_write_nothing(run_module, xeon):
    before = snapshot(xeon.root)
    failed, result = run(run_module, xeon, check=True, diff=True, name="inference", schemata={"L3": "ff0"})
    assert not failed and result["changed"]
    assert snapshot(xeon.root) == before
    assert "L3 = 0=ff0;1=ff0" in result["diff"]["after"] and "exists = False" in result["diff"]["before"]


@pytest.mark.parametrize("schemata,message", [
    ({"L3": "1000"}, "bits outside cbm_mask fff"),
    ({"L3": "0"}, "fewer than min_cbm_bits=1"),
    ({"L3": "f0f"}, "not contiguous"),
    ({"L3": "xyz"}, "not a hex mask"),
    ({"MB": 5}, "outside 10..100"),
    ({"MB": 55}, "not a multiple of bandwidth_gran 10"),
    ({"MB": {"3": 50}}, "MB has no domain 3"),
    ({"L2": "f"}, "does not offer L2"),
    ({"L4": "f"}, "unknown resource 'L4'"),
])
def test_xeon_bad_input(run_module, xeon, schemata, message):
    before = snapshot(xeon.root)
    failed, result = run(run_module, xeon, name="inference", schemata=schemata)
    assert failed and message in result["msg"], result
    assert snapshot(xeon.root) == before


def test_closids_run_out(run_module, xeon):
    for name in ("a", "b", "c"):  # num_closids 4: default + 3
        assert not run(run_module, xeon, name=name, schemata={"L3": "f"})[0]
    failed, result = run(run_module, xeon, name="d", schemata={"L3": "f"})
    assert failed and "no CLOSID left" in result["msg"]


def test_kernel_refusal_returns_last_cmd_status_and_undoes(run_module, xeon):
    run(run_module, xeon, name="inference", schemata={"L3": "ff0"})
    before = snapshot(xeon.root)
    xeon.refuse = ("MB:", "MB value error for domain 0")
    failed, result = run(run_module, xeon, name="inference", schemata={"L3": "f00", "MB": 40}, cpus="1")
    assert failed and "MB value error for domain 0" in result["msg"]
    after = snapshot(xeon.root)
    after.pop("sys/fs/resctrl/info/last_cmd_status")
    before.pop("sys/fs/resctrl/info/last_cmd_status")
    assert after == before


def test_epyc_sparse_masks_amd_bandwidth_units_and_eight_domains(run_module, epyc):
    failed, result = run(run_module, epyc, name="inference", schemata={"L3": "f0f0", "MB": {"7": 1024}})
    assert not failed, result
    line = epyc.read("inference", "schemata").splitlines()
    assert line[0] == "L3:" + ";".join("%d=f0f0" % d for d in range(8))
    assert line[1].endswith("6=2048;7=1024")
    assert any("also used by hardware" in w for w in result["warnings"])  # bit 15 is 'X'


@pytest.mark.parametrize("schemata,message", [
    ({"MB": 4096}, "outside 1..2048 (AMD units"),
    ({"L3": "10000"}, "outside cbm_mask ffff"),
    ({"L3": {"8": "f"}}, "L3 has no domain 8"),
])
def test_epyc_bad_input(run_module, epyc, schemata, message):
    failed, result = run(run_module, epyc, name="x", schemata=schemata)
    assert failed and message in result["msg"]


def test_epyc_allows_an_empty_mask(run_module, epyc):
    assert not run(run_module, epyc, name="x", schemata={"L3": "0"})[0]


def test_monitor_group_created_with_its_task(run_module, xeon):
    run(run_module, xeon, name="inference", pids=[4242])
    failed, result = run(run_module, xeon, name="inference", monitor={"server": [4242]})
    assert not failed and result["changed"]
    assert xeon.read("inference/mon_groups/server", "tasks").split() == ["4242"]
    assert not run(run_module, xeon, name="inference", monitor={"server": [4242]})[1]["changed"]


def test_absent_returns_tasks_to_the_default_group(run_module, xeon):
    run(run_module, xeon, name="inference", pids=[4242])
    failed, result = run(run_module, xeon, name="inference", state="absent")
    assert not failed and result["changed"]
    assert "4242" in xeon.read("", "tasks").split()
    assert not run(run_module, xeon, name="inference", state="absent")[1]["changed"]
    assert run(run_module, xeon, name="", state="absent")[0]


@pytest.mark.parametrize("name", ["info", "a/b", ".."])
def test_reserved_or_escaping_names(run_module, xeon, name):
    failed, result = run(run_module, xeon, name=name, schemata={"L3": "f"})
    assert failed and "not allowed" in result["msg"]


def test_host_without_rdt_says_what_is_missing(tmp_path, run_module):
    write_tree(tmp_path, {"/proc/mounts": "cgroup2 /sys/fs/cgroup cgroup2 rw 0 0\n",
                          "/proc/filesystems": "nodev\tcgroup2\n"})
    failed, result = run_module(rdt_cat, {"name": "x", "schemata": {"L3": "f"}, "mount": {}, "root": str(tmp_path)})
    assert failed and "no RDT" in result["msg"] and "MPAM" in result["msg"]


def test_unmounted_resctrl_asks_for_mount(tmp_path, run_module):
    write_tree(tmp_path, {"/proc/mounts": "", "/proc/filesystems": "nodev\tresctrl\n"})
    failed, result = run_module(rdt_cat, {"name": "x", "root": str(tmp_path)})
    assert failed and "give mount" in result["msg"]
    failed, result = run_module(rdt_cat, {"name": "x", "mount": {"cdp": True}, "root": str(tmp_path)}, check=True)
    assert not failed and result["changed"] and "cdp" in result["msg"]
