from pathlib import Path

import pytest

from ansible_collections.cpuinfer.llm.plugins.module_utils import _knobs
from ansible_collections.cpuinfer.llm.plugins.modules import thp

from kernel_tree import THP, snapshot, thp_tree

DROPIN = "etc/tmpfiles.d/cpuinfer-thp.conf"


@pytest.fixture
def root(tmp_path):
    thp_tree(tmp_path)
    return tmp_path


def _set_sysfs_like_the_kernel(root):
    """The kernel shows a written selection as the bracketed choice; emulate it after writes."""
    for name in ("enabled", "defrag"):
        path = Path(root) / THP.lstrip("/") / name
        value = path.read_text().strip()
        if "[" not in value:
            choices = {"enabled": "always madvise never", "defrag": "always defer defer+madvise madvise never"}[name]
            path.write_text(" ".join("[%s]" % c if c == value else c for c in choices.split()) + "\n")


def test_sets_runtime_and_persists(root, run_module):
    failed, result = run_module(thp, {"enabled": "madvise", "defrag": "never", "root": str(root)})
    assert not failed, result
    assert result["changed"]
    assert result["before"]["enabled"] == "always"
    assert result["after"]["enabled"] == "madvise"
    assert (root / THP.lstrip("/") / "enabled").read_text() == "madvise"
    assert (root / THP.lstrip("/") / "defrag").read_text() == "never"
    dropin = (root / DROPIN).read_text()
    assert "w /sys/kernel/mm/transparent_hugepage/enabled - - - - madvise\n" in dropin
    assert "w /sys/kernel/mm/transparent_hugepage/defrag - - - - never\n" in dropin


def test_second_run_is_unchanged(root, run_module):
    args = {"enabled": "madvise", "defrag": "never", "khugepaged": {"defrag": 0}, "root": str(root)}
    assert run_module(thp, args)[1]["changed"]
    _set_sysfs_like_the_kernel(root)
    failed, result = run_module(thp, args)
    assert not failed and not result["changed"], result


def test_check_mode_writes_nothing_but_reports_the_change(root, run_module):
    before = snapshot(root)
    failed, result = run_module(thp, {"enabled": "never", "root": str(root)}, check=True, diff=True)
    assert not failed and result["changed"]
    assert result["after"]["enabled"] == "never"
    assert snapshot(root) == before
    runtime_diff, dropin_diff = result["diff"]
    assert "enabled = always" in runtime_diff["before"] and "enabled = never" in runtime_diff["after"]
    assert dropin_diff["before"] == "" and "enabled - - - - never" in dropin_diff["after"]


def test_a_second_knob_keeps_the_first_in_the_dropin(root, run_module):
    run_module(thp, {"enabled": "madvise", "root": str(root)})
    _set_sysfs_like_the_kernel(root)
    run_module(thp, {"defrag": "never", "root": str(root)})
    dropin = (root / DROPIN).read_text()
    assert "enabled - - - - madvise" in dropin and "defrag - - - - never" in dropin


def test_not_persistent_leaves_no_dropin(root, run_module):
    failed, result = run_module(thp, {"enabled": "never", "persistent": False, "root": str(root)})
    assert not failed and result["changed"]
    assert not (root / DROPIN).exists()
    assert "persistent_file" not in result


def test_host_without_thp_fails_clearly(tmp_path, run_module):
    failed, result = run_module(thp, {"enabled": "never", "root": str(tmp_path)})
    assert failed
    assert "not available" in result["msg"] and "CONFIG_TRANSPARENT_HUGEPAGE" in result["msg"]


def test_value_the_kernel_does_not_offer_is_refused_before_any_write(tmp_path, run_module):
    thp_tree(tmp_path, defrag="always defer [madvise] never")  # an older kernel: no defer+madvise
    before = snapshot(tmp_path)
    failed, result = run_module(thp, {"enabled": "never", "defrag": "defer+madvise", "root": str(tmp_path)})
    assert failed
    assert "defrag=defer+madvise is not offered" in result["msg"]
    assert snapshot(tmp_path) == before


@pytest.mark.parametrize("khugepaged,message", [
    ({"defrag": 2}, "khugepaged.defrag must be 0 or 1"),
    ({"pages_to_scan": -1}, "must be in 0..4294967295"),
])
def test_bad_khugepaged_values(root, run_module, khugepaged, message):
    before = snapshot(root)
    failed, result = run_module(thp, {"khugepaged": khugepaged, "root": str(root)})
    assert failed and message in result["msg"]
    assert snapshot(root) == before


def test_empty_request_is_an_error(root, run_module):
    failed, result = run_module(thp, {"root": str(root)})
    assert failed and "nothing to set" in result["msg"]


def test_a_refused_write_puts_back_what_was_written(root, run_module, monkeypatch):
    before = snapshot(root)
    real_write = _knobs.write_knob

    def kernel_refuses_enabled(root_, relative, value):  # written after defrag (sorted order)
        if relative.endswith("/enabled") and value == "never":
            raise _knobs.KnobError("cannot write %s: Invalid argument" % relative)
        real_write(root_, relative, value)

    monkeypatch.setattr(_knobs, "write_knob", kernel_refuses_enabled)
    failed, result = run_module(thp, {"enabled": "never", "defrag": "never", "root": str(root)})
    assert failed and "Invalid argument" in result["msg"] and "put back" in result["msg"]
    after = snapshot(root)
    # defrag was written first, then restored as the selected word (what the kernel accepts)
    assert after.pop(THP.lstrip("/") + "/defrag") == "madvise"
    before.pop(THP.lstrip("/") + "/defrag")
    assert after == before


def test_a_host_without_systemd_is_warned_that_nothing_applies_the_dropin_at_boot(root, run_module):
    failed, result = run_module(thp, {"enabled": "madvise", "root": str(root)}, check=True)
    assert not failed and any("does not run systemd as PID 1" in w and "systemd-tmpfiles" in w for w in result["warnings"])
    (root / "run/systemd/system").mkdir(parents=True)
    failed, result = run_module(thp, {"enabled": "madvise", "root": str(root)}, check=True)
    assert not any("systemd as PID 1" in w for w in result["warnings"])
    failed, result = run_module(thp, {"enabled": "madvise", "persistent": False, "root": "/nonexistent-root"}, check=True)
    assert failed and "not available" in result["msg"]
