import pytest

from ansible_collections.cpuinfer.llm.plugins.modules import perf_paranoid

from kernel_tree import perf_tree, snapshot, write_tree

KNOB = "proc/sys/kernel/perf_event_paranoid"
DROPIN = "etc/sysctl.d/90-cpuinfer-perf-paranoid.conf"


@pytest.fixture
def root(tmp_path):
    perf_tree(tmp_path, level=3)
    return tmp_path


def test_sets_level_and_records_the_original(root, run_module):
    failed, result = run_module(perf_paranoid, {"level": 2, "root": str(root)})
    assert not failed, result
    assert result["changed"] and result["previous"] == 3 and result["level"] == 2
    assert (root / KNOB).read_text() == "2"
    dropin = (root / DROPIN).read_text()
    assert "kernel.perf_event_paranoid = 2\n" in dropin
    assert "# original level: 3\n" in dropin
    assert result["honours_level_3"] is True


def test_second_run_is_unchanged(root, run_module):
    run_module(perf_paranoid, {"level": 2, "root": str(root)})
    failed, result = run_module(perf_paranoid, {"level": 2, "root": str(root)})
    assert not failed and not result["changed"]


def test_original_survives_later_changes_and_absent_restores_it(root, run_module):
    run_module(perf_paranoid, {"level": 2, "root": str(root)})
    run_module(perf_paranoid, {"level": 1, "root": str(root)})
    assert "# original level: 3\n" in (root / DROPIN).read_text()
    failed, result = run_module(perf_paranoid, {"state": "absent", "root": str(root)})
    assert not failed and result["changed"] and result["level"] == 3
    assert (root / KNOB).read_text() == "3"
    assert not (root / DROPIN).exists()
    assert not run_module(perf_paranoid, {"state": "absent", "root": str(root)})[1]["changed"]


def test_minus_one_is_refused_without_opt_in_and_names_the_safer_path(root, run_module):
    before = snapshot(root)
    failed, result = run_module(perf_paranoid, {"level": -1, "root": str(root)})
    assert failed
    assert "allow_unrestricted" in result["msg"] and "CAP_PERFMON" in result["msg"]
    assert snapshot(root) == before


def test_minus_one_with_opt_in_is_recorded(root, run_module):
    failed, result = run_module(perf_paranoid, {"level": -1, "allow_unrestricted": True, "root": str(root)})
    assert not failed and result["level"] == -1
    assert "explicit opt-in" in (root / DROPIN).read_text()
    assert any("CAP_PERFMON" in w for w in result.get("warnings", []))


def test_check_mode_writes_nothing(root, run_module):
    before = snapshot(root)
    failed, result = run_module(perf_paranoid, {"level": 2, "root": str(root)}, check=True, diff=True)
    assert not failed and result["changed"] and result["level"] == 2
    assert snapshot(root) == before
    assert "= 3" in result["diff"]["before"] and "= 2" in result["diff"]["after"]


@pytest.mark.parametrize("args,message", [
    ({"level": 5}, "between -1 and 4"),
    ({"level": -2}, "between -1 and 4"),
    ({}, "level is required"),
    ({"state": "absent", "level": 2}, "not used with state=absent"),
])
def test_bad_input(root, run_module, args, message):
    before = snapshot(root)
    failed, result = run_module(perf_paranoid, dict(args, root=str(root)))
    assert failed and message in result["msg"]
    assert snapshot(root) == before


def test_not_persistent_changes_only_the_kernel(root, run_module):
    failed, result = run_module(perf_paranoid, {"level": 2, "persistent": False, "root": str(root)})
    assert not failed and result["changed"]
    assert not (root / DROPIN).exists()


def test_kernel_without_the_restriction_patch(tmp_path, run_module):
    perf_tree(tmp_path, level=2, restrict_patch=False)
    failed, result = run_module(perf_paranoid, {"level": 3, "root": str(tmp_path)})
    assert not failed and result["honours_level_3"] is False
    assert any("acts as 2" in w for w in result["warnings"])


def test_unreadable_kernel_config_reports_unknown(tmp_path, run_module):
    write_tree(tmp_path, {"/proc/sys/kernel/perf_event_paranoid": "2\n"})
    failed, result = run_module(perf_paranoid, {"level": 2, "root": str(tmp_path)})
    assert not failed and result["honours_level_3"] is None


def test_missing_sysctl_fails_clearly(tmp_path, run_module):
    failed, result = run_module(perf_paranoid, {"level": 2, "root": str(tmp_path)})
    assert failed and "kernel.perf_event_paranoid" in result["msg"]


def test_failed_dropin_write_puts_the_kernel_value_back(root, run_module):
    write_tree(root, {"/etc/sysctl.d": "a file where the directory should be"})
    failed, result = run_module(perf_paranoid, {"level": 2, "root": str(root)})
    assert failed and "put back" in result["msg"]
    assert (root / KNOB).read_text() == "3"
