import json

import pytest

from ansible_collections.cpuinfer.llm.plugins.module_utils import _persist
from ansible_collections.cpuinfer.llm.plugins.modules import release

from kernel_tree import snapshot

UNIT = "/etc/systemd/system/demo-a.service"
OTHER_UNIT = "/etc/systemd/system/demo-b.service"
ENV = "/etc/demo/a.env"
PATTERNS = ["/etc/systemd/system/demo-*.service", "/etc/demo/*"]


def _args(root, **extra):
    args = {"root": str(root), "name": "demo", "patterns": PATTERNS}
    args.update(extra)
    return args


def _write(root, files):
    for path, content in files.items():
        target = root / path.lstrip("/")
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(content)
    for path in _persist.matching_files(str(root), PATTERNS):
        if path not in files:
            (root / path.lstrip("/")).unlink()


def _read(root, path):
    target = root / path.lstrip("/")
    return target.read_text() if target.exists() else None


RELEASE_1 = {UNIT: "ExecStart=/opt/builds/k1/server\n", ENV: "TOKEN=hunter2\n"}
RELEASE_2 = {UNIT: "ExecStart=/opt/builds/k2/server\n", ENV: "TOKEN=hunter2\n", OTHER_UNIT: "new instance\n"}


def _two_releases(root, run_module):
    _write(root, RELEASE_1)
    first = run_module(release, _args(root))[1]
    _write(root, RELEASE_2)
    second = run_module(release, _args(root))[1]
    return first, second


def test_the_first_record_has_no_previous_release_and_a_second_changes_nothing(tmp_path, run_module):
    _write(tmp_path, RELEASE_1)
    failed, result = run_module(release, _args(tmp_path))
    assert not failed and result["changed"] and result["previous_release"] is None
    assert oct(_persist.file_state(str(tmp_path), "/var/lib/cpuinfer/releases/demo.json").mode) == "0o600"
    failed, again = run_module(release, _args(tmp_path))
    assert not failed and not again["changed"] and again["release"] == result["release"]


def test_a_changed_set_becomes_current_and_the_old_one_previous(tmp_path, run_module):
    first, second = _two_releases(tmp_path, run_module)
    assert second["changed"] and second["previous_release"] == first["release"] != second["release"]
    assert second["changed_paths"] == sorted([OTHER_UNIT, UNIT])


def test_rolling_back_restores_the_previous_files_and_removes_the_newer_ones(tmp_path, run_module):
    first, second = _two_releases(tmp_path, run_module)
    failed, result = run_module(release, _args(tmp_path, state="rolled_back"))
    assert not failed and result["changed"], result
    assert _read(tmp_path, UNIT) == RELEASE_1[UNIT] and _read(tmp_path, OTHER_UNIT) is None
    assert result["removed_paths"] == [OTHER_UNIT] and result["changed_paths"] == sorted([OTHER_UNIT, UNIT])
    assert result["release"] == first["release"] and result["previous_release"] is None
    # a converge that records the same files again changes nothing
    assert not run_module(release, _args(tmp_path))[1]["changed"]


def test_a_second_rollback_changes_nothing(tmp_path, run_module):
    first, second = _two_releases(tmp_path, run_module)
    run_module(release, _args(tmp_path, state="rolled_back"))
    before = snapshot(tmp_path)
    failed, result = run_module(release, _args(tmp_path, state="rolled_back"))
    assert not failed and not result["changed"] and result["rolled_back_from"] == second["release"]
    assert snapshot(tmp_path) == before


def test_one_release_and_no_rollback_yet_is_refused(tmp_path, run_module):
    _write(tmp_path, RELEASE_1)
    run_module(release, _args(tmp_path))
    before = snapshot(tmp_path)
    failed, result = run_module(release, _args(tmp_path, state="rolled_back"))
    assert failed and "no earlier one" in result["msg"] and "nothing written" in result["msg"]
    assert snapshot(tmp_path) == before


def test_a_new_release_after_a_rollback_can_be_rolled_back_again(tmp_path, run_module):
    first, dummy = _two_releases(tmp_path, run_module)
    run_module(release, _args(tmp_path, state="rolled_back"))
    _write(tmp_path, RELEASE_2)
    recorded = run_module(release, _args(tmp_path))[1]
    assert recorded["changed"] and recorded["rolled_back_from"] is None
    failed, result = run_module(release, _args(tmp_path, state="rolled_back"))
    assert not failed and result["changed"] and _read(tmp_path, UNIT) == RELEASE_1[UNIT]


def test_files_written_but_never_recorded_go_back_to_the_recorded_release(tmp_path, run_module):
    first, second = _two_releases(tmp_path, run_module)
    _write(tmp_path, {UNIT: "a converge that failed before recording\n", ENV: "TOKEN=hunter2\n"})
    failed, result = run_module(release, _args(tmp_path, state="rolled_back"))
    assert not failed and not result["removed_paths"]
    assert _read(tmp_path, UNIT) == RELEASE_2[UNIT] and _read(tmp_path, OTHER_UNIT) == RELEASE_2[OTHER_UNIT]
    assert result["release"] == second["release"] and result["previous_release"] == first["release"]


def test_rollback_without_a_record_is_refused(tmp_path, run_module):
    _write(tmp_path, RELEASE_1)
    failed, result = run_module(release, _args(tmp_path, state="rolled_back"))
    assert failed and "no release has been recorded" in result["msg"]


@pytest.mark.parametrize("state", ["recorded", "rolled_back"])
def test_check_mode_writes_nothing(tmp_path, run_module, state):
    _two_releases(tmp_path, run_module)
    _write(tmp_path, RELEASE_1)
    before = snapshot(tmp_path)
    failed, result = run_module(release, _args(tmp_path, state=state), check=True, diff=True)
    assert not failed and result["changed"]
    assert snapshot(tmp_path) == before
    assert "hunter2" not in json.dumps(result)


def test_a_failed_write_puts_every_file_and_the_record_back(tmp_path, run_module, monkeypatch):
    _two_releases(tmp_path, run_module)
    before = snapshot(tmp_path)
    real = release.put_state

    def failing(root, path, state):
        if path.endswith("/demo.json") and state is not None and "k1" in state.content:  # the record, written last
            raise _persist.PersistError("disk full")
        return real(root, path, state)
    monkeypatch.setattr(release, "put_state", failing)
    failed, result = run_module(release, _args(tmp_path, state="rolled_back"))
    assert failed and "disk full" in result["msg"] and "every change made before it was put back" in result["msg"], result
    assert snapshot(tmp_path) == before


def test_an_unreadable_record_is_refused(tmp_path, run_module):
    _write(tmp_path, RELEASE_1)
    (tmp_path / "var/lib/cpuinfer/releases").mkdir(parents=True)
    (tmp_path / "var/lib/cpuinfer/releases/demo.json").write_text("{not json")
    failed, result = run_module(release, _args(tmp_path))
    assert failed and "move it aside" in result["msg"]


@pytest.mark.parametrize("extra, message", [
    ({"name": "../x"}, "letters, digits"),
    ({"patterns": []}, "at least one"),
    ({"patterns": ["etc/demo/*"]}, "absolute pattern"),
    ({"patterns": ["/etc/../demo/*"]}, "absolute pattern"),
    ({"patterns": ["/var/lib/cpuinfer/releases/*"]}, "record store"),
])
def test_a_bad_request_is_refused_before_any_write(tmp_path, run_module, extra, message):
    _write(tmp_path, RELEASE_1)
    before = snapshot(tmp_path)
    failed, result = run_module(release, _args(tmp_path, **extra))
    assert failed and message in result["msg"] and "nothing written" in result["msg"], result
    assert snapshot(tmp_path) == before


def _with_files(root, **extra):
    files = [{"path": UNIT, "content": "ExecStart=/opt/builds/k3/server\n"},
             {"path": ENV, "secret_content": "TOKEN=hunter3\n", "mode": "0600"},
             {"path": "/etc/demo/not-in-a-pattern/x", "content": "x\n"}]
    return _args(root, directories=[{"path": "/etc/demo", "mode": "0700"}], files=files, **extra)


def test_files_are_written_and_recorded_as_the_release_in_one_run(tmp_path, run_module):
    first, second = _two_releases(tmp_path, run_module)
    failed, result = run_module(release, _with_files(tmp_path), diff=True)
    assert not failed and result["changed"], result
    assert _read(tmp_path, UNIT) == "ExecStart=/opt/builds/k3/server\n" and _read(tmp_path, ENV) == "TOKEN=hunter3\n"
    assert result["written_paths"] == ["/etc/demo/not-in-a-pattern", "/etc/demo", UNIT, ENV, "/etc/demo/not-in-a-pattern/x"]
    assert result["previous_release"] == second["release"] and result["changed_paths"] == [ENV, UNIT]
    assert "hunter" not in json.dumps(result)
    assert [d["after_header"].split(" ")[0] for d in result["diff"]][-1] == "/var/lib/cpuinfer/releases/demo.json"
    # the record holds what is on disk now: recording again, without files, changes nothing
    failed, again = run_module(release, _args(tmp_path))
    assert not failed and not again["changed"] and again["release"] == result["release"]
    failed, again = run_module(release, _with_files(tmp_path))
    assert not failed and not again["changed"] and again["written_paths"] == []


def test_check_mode_with_files_writes_nothing_and_names_the_release_it_would_record(tmp_path, run_module):
    _two_releases(tmp_path, run_module)
    before = snapshot(tmp_path)
    failed, result = run_module(release, _with_files(tmp_path), check=True, diff=True)
    assert not failed and result["changed"] and snapshot(tmp_path) == before
    failed, real = run_module(release, _with_files(tmp_path))
    assert result["release"] == real["release"] and result["written_paths"] == real["written_paths"]


def test_a_failed_record_write_puts_the_files_back(tmp_path, run_module, monkeypatch):
    _two_releases(tmp_path, run_module)
    before = snapshot(tmp_path)
    real = release.put_state

    def failing(root, path, state):
        if path.endswith("/demo.json"):
            raise _persist.PersistError("disk full")
        return real(root, path, state)
    monkeypatch.setattr(release, "put_state", failing)
    failed, result = run_module(release, _with_files(tmp_path))
    assert failed and "disk full" in result["msg"] and "every change made before it was put back" in result["msg"], result
    assert snapshot(tmp_path) == before
