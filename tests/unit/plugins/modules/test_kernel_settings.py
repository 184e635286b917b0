"""kernel_settings: thp, perf_paranoid and sysctl in one run, planned together, written all or none."""

import pytest

from ansible_collections.cpuinfer.llm.plugins.module_utils import _persist, _thp
from ansible_collections.cpuinfer.llm.plugins.modules import kernel_settings, perf_paranoid, sysctl, thp

from kernel_tree import FakeThpKernel, full_snapshot, perf_tree, snapshot, write_tree

THP = {"enabled": "madvise", "defrag": "never"}
PERF = {"level": 2}
SYSCTL = {"values": {"kernel.sched_rt_runtime_us": 950000, "kernel.numa_balancing": 0}}


def _host(root, monkeypatch=None):
    fake = FakeThpKernel(root)  # a THP selection reads back bracketed, as the kernel's does (any root, once installed)
    if monkeypatch:
        fake.install(monkeypatch)
    perf_tree(root, level=3)
    write_tree(root, {"/proc/sys/kernel/sched_rt_runtime_us": "-1\n"})
    return root


@pytest.fixture
def host(tmp_path, monkeypatch):
    return _host(tmp_path, monkeypatch)


def _as_read(root):
    """The values as the kernel shows them, and the drop-ins (a put-back value reads the same, not byte for byte)."""
    files = dict((path, text) for path, text in snapshot(root).items() if path.startswith("etc/"))
    return (_thp.read_state(str(root))[0], (root / "proc/sys/kernel/perf_event_paranoid").read_text().strip(),
            (root / "proc/sys/kernel/sched_rt_runtime_us").read_text().strip(), files)


def test_one_run_leaves_the_host_as_the_three_modules_do(tmp_path, run_module, monkeypatch):
    together, one_by_one = _host(tmp_path / "together", monkeypatch), _host(tmp_path / "one_by_one")
    failed, result = run_module(kernel_settings, {"thp": THP, "perf_paranoid": PERF, "sysctl": SYSCTL, "root": str(together)})
    assert not failed and result["changed"], result
    for module, args in ((thp, THP), (perf_paranoid, PERF), (sysctl, SYSCTL)):
        assert not run_module(module, dict(args, root=str(one_by_one)))[0]
    assert snapshot(together) == snapshot(one_by_one)
    assert result["sysctl"]["missing"] == ["kernel.numa_balancing"] and result["perf_paranoid"]["original"] == 3
    assert result["thp"]["after"]["enabled"] == "madvise"
    failed, again = run_module(kernel_settings, {"thp": THP, "perf_paranoid": PERF, "sysctl": SYSCTL, "root": str(together)})
    assert not failed and not again["changed"], again
    assert not any(again[part]["changed"] for part in ("thp", "perf_paranoid", "sysctl"))


def test_a_bad_part_refuses_the_run_before_any_part_writes(host, run_module):
    before = snapshot(host)
    failed, result = run_module(kernel_settings, {"thp": THP, "perf_paranoid": {"level": -1}, "root": str(host)})
    assert failed and "allow_unrestricted" in result["msg"] and "nothing written" in result["msg"], result
    assert snapshot(host) == before


@pytest.mark.parametrize("writer, suffix, args", [
    ("restore_file", "90-cpuinfer-tuning.conf", {"thp": THP, "perf_paranoid": PERF, "sysctl": SYSCTL}),
    ("replace_file", "inference.slice", {"thp": THP, "perf_paranoid": PERF,
                                         "files": [{"path": "/etc/systemd/system/inference.slice", "content": "[Slice]\n"}]}),
], ids=["a part's drop-in", "a file"])
def test_a_failed_write_puts_back_what_the_other_parts_wrote(host, run_module, monkeypatch, writer, suffix, args):
    before = _as_read(host)
    real = getattr(_persist, writer)

    def fail_on(root, relative, *rest):
        if relative.endswith(suffix):
            raise _persist.PersistError("disk full")
        return real(root, relative, *rest)
    monkeypatch.setattr(_persist, writer, fail_on)
    failed, result = run_module(kernel_settings, dict(args, root=str(host)))
    assert failed and "disk full" in result["msg"] and "put back" in result["msg"], result
    assert _as_read(host) == before and before[1] == "3"


def test_check_mode_writes_nothing_and_the_diff_is_headed_by_part(host, run_module):
    before = snapshot(host)
    failed, result = run_module(kernel_settings, {"thp": THP, "perf_paranoid": PERF, "root": str(host)}, check=True, diff=True)
    assert not failed and result["changed"] and snapshot(host) == before
    headers = [entry["before_header"] for entry in result["diff"]]
    assert headers == ["thp runtime", "thp /etc/tmpfiles.d/cpuinfer-thp.conf", "perf_paranoid"], headers
    assert "sysctl" not in result and "diff" not in result["thp"]


@pytest.mark.parametrize("args, words", [
    ({}, "nothing to set: give thp, perf_paranoid, sysctl, directories, files, absent or units"),
    ({"thp": THP, "files": [{"path": "/etc/tmpfiles.d/cpuinfer-thp.conf", "content": "x"}]},
     "/etc/tmpfiles.d/cpuinfer-thp.conf: thp writes this drop-in"),
    ({"sysctl": SYSCTL, "directories": [{"path": "/etc/sysctl.d/90-cpuinfer-tuning.conf/"}]},
     "/etc/sysctl.d/90-cpuinfer-tuning.conf/: sysctl writes this drop-in"),
    ({"perf_paranoid": PERF, "files": [{"path": "/etc/slice", "content": "x", "mode": "rw"}]}, "mode"),
    ({"sysctl": {"values": {"kernel.numa_balancing": 0}, "dropin": "/etc/sysctl.d/90-cpuinfer-perf-paranoid.conf"}},
     "perf_paranoid's own drop-in"),
    ({"sysctl": {"values": {"kernel.numa_balancing": 0}, "dropin": "/etc/tmpfiles.d/cpuinfer-thp.conf"}},
     "sysctl.dropin /etc/tmpfiles.d/cpuinfer-thp.conf is thp's own drop-in"),
    ({"sysctl": SYSCTL, "absent": ["/etc/sysctl.d/90-cpuinfer-tuning.conf"]},
     "absent /etc/sysctl.d/90-cpuinfer-tuning.conf: sysctl writes /etc/sysctl.d/90-cpuinfer-tuning.conf there"),
    ({"thp": THP, "absent": ["/etc/tmpfiles.d/"]}, "absent /etc/tmpfiles.d/: thp writes /etc/tmpfiles.d/cpuinfer-thp.conf there"),
    ({"thp": {}}, "nothing to set: give enabled, defrag or khugepaged"),
    ({"sysctl": {"values": {"kernel.perf_event_paranoid": 1}}}, "is set by cpuinfer.llm.perf_paranoid"),
])
def test_requests_that_cannot_be_carried_out_are_refused(host, run_module, args, words):
    before = snapshot(host)
    failed, result = run_module(kernel_settings, dict(args, root=str(host)))
    assert failed and words in result["msg"], result
    assert snapshot(host) == before


SLICE = {"path": "/etc/systemd/system/inference.slice", "content": "[Slice]\nAllowedCPUs=1\n"}


def test_files_are_written_in_the_same_run_and_reported_by_path(host, run_module):
    failed, result = run_module(kernel_settings, {"thp": THP, "files": [SLICE], "root": str(host)})
    assert not failed and result["changed"], result
    assert (host / SLICE["path"].lstrip("/")).read_text() == SLICE["content"]
    assert result["changed_paths"][-1] == SLICE["path"] and result["thp"]["after"]["enabled"] == "madvise"
    failed, again = run_module(kernel_settings, {"thp": THP, "files": [SLICE], "root": str(host)})
    assert not failed and not again["changed"] and again["changed_paths"] == []


def test_files_alone_change_the_run_and_show_in_the_diff(host, run_module):
    failed, result = run_module(kernel_settings, {"thp": THP, "files": [SLICE], "root": str(host)})
    assert not failed
    edited = dict(SLICE, content="[Slice]\nAllowedCPUs=2\n")
    failed, result = run_module(kernel_settings, {"thp": THP, "files": [edited], "root": str(host)}, check=True, diff=True)
    assert not failed and result["changed"] and not result["thp"]["changed"]
    assert result["changed_paths"] == [SLICE["path"]]
    slice_diff = result["diff"][-1]
    assert (slice_diff["before"], slice_diff["after"]) == (SLICE["content"], edited["content"]), result["diff"]
    assert (host / SLICE["path"].lstrip("/")).read_text() == SLICE["content"]


def test_a_failed_run_removes_the_directories_it_created(host, run_module, monkeypatch):
    """A host without /etc/sysctl.d and /etc/tmpfiles.d: the run makes them for its drop-ins; when a later
    write fails they go again (makedirs was never undone, and left them behind)."""
    before = full_snapshot(host)
    real = _persist.replace_file

    def fail_on(root, relative, *rest):
        if relative.endswith("inference.slice"):
            raise _persist.PersistError("disk full")
        return real(root, relative, *rest)
    monkeypatch.setattr(_persist, "replace_file", fail_on)
    args = {"thp": THP, "sysctl": SYSCTL, "files": [{"path": "/etc/systemd/system/inference.slice", "content": "x"}]}
    failed, result = run_module(kernel_settings, dict(args, root=str(host)))
    assert failed and "disk full" in result["msg"] and "put back" in result["msg"], result
    after = full_snapshot(host)
    assert sorted(set(after) - set(before)) == [] and not (host / "etc" / "sysctl.d").exists()
    assert dict((path, entry) for path, entry in after.items() if not path.startswith(("proc", "sys"))) == \
        dict((path, entry) for path, entry in before.items() if not path.startswith(("proc", "sys")))


def test_a_slice_written_beside_the_settings_is_started_in_the_same_run(host, run_module, systemd):
    args = {"thp": THP, "files": [SLICE], "root": str(host),
            "units": [{"name": "inference.slice", "enabled": True}]}
    failed, result = run_module(kernel_settings, args)
    assert not failed, result
    assert systemd.changes() == [["daemon-reload"], ["enable", "inference.slice"], ["start", "inference.slice"]]
    del systemd.calls[:]
    failed, again = run_module(kernel_settings, args)
    assert not failed and not again["changed"] and systemd.changes() == []
