import os
import stat
import tempfile

import pytest

from ansible_collections.cpuinfer.llm.plugins.module_utils import _persist
from ansible_collections.cpuinfer.llm.plugins.modules import managed_files

from kernel_tree import snapshot

UNIT = "/etc/systemd/system/demo.service"
ENV = "/etc/demo/demo.env"


def _args(root, **extra):
    args = {
        "root": str(root),
        "directories": [{"path": "/etc/demo", "mode": "0700"}],
        "files": [
            {"path": UNIT, "content": "[Service]\nExecStart=/bin/true\n"},
            {"path": ENV, "secret_content": "TOKEN=hunter2\n", "mode": "0600"},
        ],
    }
    args.update(extra)
    return args


def _mode(root, path):
    return stat.S_IMODE(os.stat(str(root) + path).st_mode)


def test_writes_files_directories_and_missing_parents(tmp_path, run_module):
    failed, result = run_module(managed_files, _args(tmp_path))
    assert not failed, result
    assert (tmp_path / UNIT.lstrip("/")).read_text() == "[Service]\nExecStart=/bin/true\n"
    assert _mode(tmp_path, "/etc/demo") == 0o700
    assert _mode(tmp_path, ENV) == 0o600
    assert _mode(tmp_path, "/etc/systemd/system") == 0o755
    assert result["changed_paths"] == ["/etc", "/etc/systemd", "/etc/systemd/system", "/etc/demo", UNIT, ENV]


def test_a_second_run_changes_nothing(tmp_path, run_module):
    assert run_module(managed_files, _args(tmp_path))[1]["changed"]
    failed, result = run_module(managed_files, _args(tmp_path))
    assert not failed and not result["changed"] and result["changed_paths"] == []


def test_only_what_differs_is_written(tmp_path, run_module):
    run_module(managed_files, _args(tmp_path))
    os.chmod(str(tmp_path) + ENV, 0o644)
    (tmp_path / UNIT.lstrip("/")).write_text("edited by hand\n")
    failed, result = run_module(managed_files, _args(tmp_path))
    assert not failed and result["changed_paths"] == [UNIT, ENV]
    assert _mode(tmp_path, ENV) == 0o600


def test_check_mode_writes_nothing_and_the_diff_hides_secrets(tmp_path, run_module):
    before = snapshot(tmp_path)
    failed, result = run_module(managed_files, _args(tmp_path), check=True, diff=True)
    assert not failed and result["changed"]
    assert snapshot(tmp_path) == before
    by_header = {d["after_header"].split(" ")[0]: d for d in result["diff"]}
    assert by_header[UNIT]["after"] == "[Service]\nExecStart=/bin/true\n" and by_header[UNIT]["before"] == ""
    assert "hunter2" not in str(result)
    assert by_header[ENV]["after"] == "(secret: 14 bytes)\n"


@pytest.mark.parametrize("bad, message", [
    ({"path": "relative/x", "content": ""}, "absolute path"),
    ({"path": "/etc/../x", "content": ""}, "absolute path"),
    ({"path": "/etc/x", "content": "", "mode": "rw-r--r--"}, "not octal"),
    ({"path": "/etc/x", "content": "", "owner": "no-such-user-cpuinfer"}, "no user no-such-user-cpuinfer"),
    ({"path": "/etc/x", "content": "", "group": "no-such-group-cpuinfer"}, "no group no-such-group-cpuinfer"),
    ({"path": UNIT, "content": "twice"}, "listed twice"),
])
def test_a_bad_entry_refuses_the_whole_request_before_any_write(tmp_path, run_module, bad, message):
    args = _args(tmp_path)
    args["files"].insert(0, bad)
    failed, result = run_module(managed_files, args)
    assert failed and message in result["msg"] and "nothing written" in result["msg"], result
    assert not (tmp_path / "etc").exists()


def test_a_directory_in_the_way_of_a_file_is_refused(tmp_path, run_module):
    (tmp_path / UNIT.lstrip("/")).mkdir(parents=True)
    failed, result = run_module(managed_files, _args(tmp_path))
    assert failed and "is a directory, not a file" in result["msg"]
    assert not (tmp_path / "etc" / "demo").exists()


def test_a_failed_write_puts_back_everything_written_before_it(tmp_path, run_module, monkeypatch):
    (tmp_path / "etc" / "systemd" / "system").mkdir(parents=True)
    (tmp_path / UNIT.lstrip("/")).write_text("the old unit\n")
    real = _persist.replace_file

    def fail_on_env(root, relative, *rest, **kwargs):
        if relative == ENV:
            raise _persist.PersistError("cannot write %s: disk full" % relative)
        return real(root, relative, *rest, **kwargs)

    monkeypatch.setattr(_persist, "replace_file", fail_on_env)
    failed, result = run_module(managed_files, _args(tmp_path))
    assert failed and "disk full" in result["msg"] and "put back" in result["msg"], result
    assert (tmp_path / UNIT.lstrip("/")).read_text() == "the old unit\n"
    assert not (tmp_path / "etc" / "demo").exists()


def test_report_reads_files_after_the_writes_in_the_same_run(tmp_path, run_module):
    import hashlib

    model = tmp_path / "var/lib/demo/models/m.gguf"
    model.parent.mkdir(parents=True)
    model.write_bytes(b"GGUF\x00\xff")
    os.chmod(str(model), 0o444)
    failed, result = run_module(managed_files, _args(tmp_path, report=["/var/lib/demo/models/m.gguf", "/var/lib/demo/models/gone.gguf", ENV]))
    assert not failed, result
    assert result["records"]["/var/lib/demo/models/m.gguf"] == {
        "sha256": hashlib.sha256(b"GGUF\x00\xff").hexdigest(), "mode": "0444", "uid": os.getuid(), "gid": os.getgid()}
    assert result["records"]["/var/lib/demo/models/gone.gguf"] is None
    assert result["records"][ENV]["mode"] == "0600"  # written by this run, then read


def test_report_in_check_mode_reads_what_is_there_and_writes_nothing(tmp_path, run_module):
    before = snapshot(tmp_path)
    failed, result = run_module(managed_files, _args(tmp_path, report=[ENV]), check=True)
    assert not failed and result["changed"] and result["records"] == {ENV: None}
    assert snapshot(tmp_path) == before


def test_a_bad_report_path_is_refused_before_anything_is_written(tmp_path, run_module):
    before = snapshot(tmp_path)
    failed, result = run_module(managed_files, _args(tmp_path, report=["models/m.gguf"]))
    assert failed and "report: 'models/m.gguf' is not an absolute path" in result["msg"]
    assert snapshot(tmp_path) == before


def test_a_report_that_cannot_be_read_fails_the_run_and_puts_the_writes_back(tmp_path, run_module):
    (tmp_path / "srv").mkdir()
    os.symlink("/etc/hostname", str(tmp_path / "srv/link.gguf"))
    before = snapshot(tmp_path)
    failed, result = run_module(managed_files, _args(tmp_path, report=["/srv/link.gguf"]))
    assert failed and "link.gguf is neither a file nor a directory" in result["msg"]
    assert snapshot(tmp_path) == before


@pytest.mark.parametrize("mode, words", [
    (420, "mode 420 is a number, not octal text (YAML reads an unquoted 0644 as the number 420); quote it: mode: '0644'"),
    (644, "mode 644 is a number"),
    (True, "mode True is not octal text"),
])
def test_an_unquoted_yaml_mode_is_refused_with_how_to_quote_it(tmp_path, run_module, mode, words):
    """mode: 0644 unquoted reached the module as 420 and the file got 0420."""
    failed, result = run_module(managed_files, {"root": str(tmp_path), "files": [{"path": "/etc/x", "content": "", "mode": mode}]})
    assert failed and words in result["msg"], result
    assert not (tmp_path / "etc").exists()


def test_one_file_under_two_spellings_is_listed_twice(tmp_path, run_module):
    failed, result = run_module(managed_files, {"root": str(tmp_path), "files": [
        {"path": "/etc//x", "content": "a"}, {"path": "/etc/./x/", "content": "b"}]})
    assert failed and "/etc/x is listed twice" in result["msg"], result


def test_a_path_is_written_in_its_one_spelling(tmp_path, run_module):
    failed, result = run_module(managed_files, {"root": str(tmp_path), "files": [{"path": "/etc//demo/./x.conf", "content": "a"}]})
    assert not failed and result["changed_paths"] == ["/etc", "/etc/demo", "/etc/demo/x.conf"], result
    assert (tmp_path / "etc/demo/x.conf").read_text() == "a"


def _installed(tmp_path):
    """What a role's revert removes: a unit, a directory tree with a secret in it, a link."""
    (tmp_path / "etc/systemd/system").mkdir(parents=True)
    (tmp_path / UNIT.lstrip("/")).write_text("[Service]\n")
    models = tmp_path / "var/lib/demo/models"
    models.mkdir(parents=True)
    (models / "m.gguf").write_bytes(b"GGUF")
    (tmp_path / "etc/demo").mkdir()
    (tmp_path / ENV.lstrip("/")).write_text("TOKEN=hunter2\n")
    os.symlink("models", str(tmp_path / "var/lib/demo/current"))
    return ["/var/lib/demo", UNIT, "/etc/demo", "/var/lib/demo/current", "/etc/never-there.conf"]


def test_absent_removes_files_links_and_whole_trees_and_leaves_nothing_aside(tmp_path, run_module):
    absent = _installed(tmp_path)
    failed, result = run_module(managed_files, {"root": str(tmp_path), "absent": absent}, diff=True)
    assert not failed and result["changed"], result
    # the link inside a removed tree goes with it; the path never there changes nothing
    assert result["changed_paths"] == ["/var/lib/demo", UNIT, "/etc/demo"]
    assert sorted(os.listdir(str(tmp_path / "var/lib"))) == [] and os.listdir(str(tmp_path / "etc/systemd/system")) == []
    assert sorted(os.listdir(str(tmp_path / "etc"))) == ["systemd"]
    assert "hunter2" not in str(result)
    assert [d["after_header"] for d in result["diff"]] == [p + " (absent)" for p in result["changed_paths"]]
    assert [(d["before_header"], d["before"], d["after"]) for d in result["diff"]] == [
        ("/var/lib/demo", "a directory, with everything in it\n", ""), (UNIT, "a file of 10 bytes\n", ""),
        ("/etc/demo", "a directory, with everything in it\n", "")]
    again = run_module(managed_files, {"root": str(tmp_path), "absent": absent})[1]
    assert not again["changed"] and again["changed_paths"] == []


def test_absent_in_check_mode_removes_nothing(tmp_path, run_module):
    absent = _installed(tmp_path)
    before = snapshot(tmp_path)
    failed, result = run_module(managed_files, {"root": str(tmp_path), "absent": absent}, check=True, diff=True)
    assert not failed and result["changed"] and result["changed_paths"] == ["/var/lib/demo", UNIT, "/etc/demo"]
    assert snapshot(tmp_path) == before


def test_a_failed_write_puts_every_removed_tree_back(tmp_path, run_module, monkeypatch):
    absent = _installed(tmp_path)
    before = snapshot(tmp_path)
    real = _persist.replace_file

    def fail(root, relative, *rest, **kwargs):
        if relative == "/etc/new.conf":
            raise _persist.PersistError("cannot write %s: disk full" % relative)
        return real(root, relative, *rest, **kwargs)

    monkeypatch.setattr(_persist, "replace_file", fail)
    failed, result = run_module(managed_files, {"root": str(tmp_path), "absent": absent,
                                                "files": [{"path": "/etc/new.conf", "content": "x"}]})
    assert failed and "disk full" in result["msg"] and "put back" in result["msg"], result
    assert snapshot(tmp_path) == before


@pytest.mark.parametrize("absent, files, message", [
    (["/etc/demo"], [{"path": ENV, "content": "x"}], "/etc/demo/demo.env is both written and removed (absent /etc/demo)"),
    ([UNIT], [{"path": UNIT, "content": "x"}], "is both written and removed"),
    (["/"], [], "is not an absolute path below /"),
    (["etc/demo"], [], "is not an absolute path"),
    ([UNIT, UNIT + "/"], [], "listed twice in absent"),
])
def test_a_bad_absent_path_refuses_the_whole_request(tmp_path, run_module, absent, files, message):
    _installed(tmp_path)
    before = snapshot(tmp_path)
    failed, result = run_module(managed_files, {"root": str(tmp_path), "absent": absent, "files": files})
    assert failed and message in result["msg"] and "nothing written" in result["msg"], result
    assert snapshot(tmp_path) == before


def test_absent_through_a_linked_directory_is_refused(tmp_path, run_module):
    _installed(tmp_path)
    os.symlink(str(tmp_path / "etc"), str(tmp_path / "etc-link"))
    failed, result = run_module(managed_files, {"root": str(tmp_path), "absent": ["/etc-link/demo"]})
    assert failed and "leads through /etc-link, a symbolic link" in result["msg"], result
    assert (tmp_path / ENV.lstrip("/")).exists()


def test_a_copy_that_cannot_be_deleted_is_a_warning_not_a_failure(tmp_path, run_module, monkeypatch):
    _installed(tmp_path)

    def refuse(root, aside):
        raise _persist.PersistError("cannot delete %s: busy" % aside)

    monkeypatch.setattr(_persist, "discard", refuse)
    failed, result = run_module(managed_files, {"root": str(tmp_path), "absent": [UNIT]})
    assert not failed and result["changed_paths"] == [UNIT], result
    assert not (tmp_path / UNIT.lstrip("/")).exists()
    assert any("not cleaned up: remove %s (cannot delete" % UNIT in w for w in result.get("warnings", [])), result


CONFIG = "/etc/demo/demo.cfg"


def _config_args(root, content, validate_argv, **extra):
    return dict({"root": str(root), "files": [{"path": CONFIG, "content": content}],
                 "validate": [{"path": CONFIG, "argv": validate_argv}]}, **extra)


def test_required_directories_missing_refuse_the_run_naming_each(tmp_path, run_module):
    (tmp_path / "run" / "present").mkdir(parents=True)
    (tmp_path / "run" / "a-file").write_text("")
    before = snapshot(tmp_path)
    failed, result = run_module(managed_files, _args(tmp_path, required_directories=[
        "/run/present", "/run/missing", "/run/a-file"]))
    assert failed
    assert "/run/missing does not exist or is not a directory" in result["msg"]
    assert "/run/a-file does not exist or is not a directory" in result["msg"]
    assert "/run/present" not in result["msg"] and "nothing written" in result["msg"]
    assert snapshot(tmp_path) == before
    failed, result = run_module(managed_files, _args(tmp_path, required_directories=["/run/present"]))
    assert not failed and result["changed"], result


def test_validate_refuses_content_its_program_rejects_and_writes_nothing(tmp_path, run_module):
    before = snapshot(tmp_path)
    failed, result = run_module(managed_files, _config_args(tmp_path, "broken\n", ["grep", "-q", "^valid$", "%s"]))
    assert failed and CONFIG + ": grep -q ^valid$ %s refused the new content (exit 1)" in result["msg"], result
    assert snapshot(tmp_path) == before
    failed, result = run_module(managed_files, _config_args(tmp_path, "valid\n", ["grep", "-q", "^valid$", "%s"]))
    assert not failed and (tmp_path / CONFIG.lstrip("/")).read_text() == "valid\n"


def test_validate_sees_the_new_content_in_a_file_of_its_own(tmp_path, run_module):
    seen = tmp_path / "seen"
    (tmp_path / "tree").mkdir()
    failed, result = run_module(managed_files, dict(_config_args(
        tmp_path, "new text\n", ["cp", "%s", str(seen)]), root=str(tmp_path / "tree")))
    assert not failed, result
    assert seen.read_text() == "new text\n"


def test_validate_writes_its_copy_in_the_system_temporary_directory(tmp_path, run_module, monkeypatch):
    scratch, link, tree = tmp_path / "scratch", tmp_path / "link", tmp_path / "tree"
    scratch.mkdir()
    tree.mkdir()
    monkeypatch.setattr(tempfile, "tempdir", str(scratch))
    failed, result = run_module(managed_files, dict(_config_args(tree, "new text\n", ["ln", "-s", "%s", str(link)])))
    assert not failed, result
    assert os.path.dirname(os.readlink(str(link))) == str(scratch)
    assert os.listdir(str(scratch)) == []  # removed after the check


def test_validate_runs_only_when_the_content_changes_and_never_in_check_mode(tmp_path, run_module):
    assert not run_module(managed_files, _config_args(tmp_path, "valid\n", ["true", "%s"]))[0]
    # unchanged: a command that would refuse is not run
    failed, result = run_module(managed_files, _config_args(tmp_path, "valid\n", ["false", "%s"]))
    assert not failed and not result["changed"], result
    failed, result = run_module(managed_files, _config_args(tmp_path, "other\n", ["false", "%s"]), check=True)
    assert not failed and result["changed_paths"] == [CONFIG], result


def test_validate_entries_must_name_a_file_written_and_hold_the_placeholder(tmp_path, run_module):
    args = _config_args(tmp_path, "valid\n", ["true"])
    args["validate"].append({"path": "/etc/other.cfg", "argv": ["true", "%s"]})
    failed, result = run_module(managed_files, args)
    assert failed
    assert "validate /etc/demo/demo.cfg: its argv has no %s" in result["msg"]
    assert "validate: /etc/other.cfg is not one of the files written" in result["msg"]
    assert not (tmp_path / CONFIG.lstrip("/")).exists()


def _service_args(root, **extra):
    return _args(root, units=[{"name": "demo.service", "enabled": True, "restart_on_change": [UNIT, ENV]}], **extra)


def test_units_written_are_reloaded_enabled_and_started_in_the_same_run(tmp_path, run_module, systemd):
    failed, result = run_module(managed_files, _service_args(tmp_path))
    assert not failed, result
    assert systemd.changes() == [["daemon-reload"], ["enable", "demo.service"], ["start", "demo.service"]]
    assert result["units"]["started"] == ["demo.service"] and result["units"]["reloaded"]
    del systemd.calls[:]
    failed, again = run_module(managed_files, _service_args(tmp_path))
    assert not failed and not again["changed"] and systemd.changes() == []


def test_a_running_unit_restarts_when_its_file_changes(tmp_path, run_module, systemd):
    run_module(managed_files, _service_args(tmp_path))
    (tmp_path / ENV.lstrip("/")).write_text("TOKEN=old\n")
    del systemd.calls[:]
    failed, result = run_module(managed_files, _service_args(tmp_path))
    assert not failed and result["changed"] and systemd.changes() == [["restart", "demo.service"]]


def test_check_mode_says_what_it_would_start_and_runs_no_systemctl_change(tmp_path, run_module, systemd):
    before = snapshot(tmp_path)
    failed, result = run_module(managed_files, _service_args(tmp_path), check=True, diff=True)
    assert not failed and result["changed"] and result["units"]["started"] == ["demo.service"]
    assert systemd.changes() == [] and snapshot(tmp_path) == before
    assert result["diff"][-1]["after"] == "systemd reloaded (a unit file changed)\ndemo.service: enabled, started\n"


def test_a_unit_that_fails_to_start_takes_back_the_files_and_what_was_enabled(tmp_path, run_module, systemd):
    systemd.fail = ["start", "demo.service"]
    before = snapshot(tmp_path)
    failed, result = run_module(managed_files, _service_args(tmp_path))
    assert failed and "systemctl start demo.service failed (exit 1)" in result["msg"], result
    assert "every change made before it was put back" in result["msg"]
    assert snapshot(tmp_path) == before
    assert systemd.changes()[-2:] == [["disable", "demo.service"], ["daemon-reload"]]


def test_units_below_a_tree_are_refused_with_nothing_written(tmp_path, run_module):
    before = snapshot(tmp_path)
    failed, result = run_module(managed_files, _service_args(tmp_path))
    assert failed and "systemd runs this host's units, not a tree's" in result["msg"], result
    assert snapshot(tmp_path) == before


def test_units_whose_state_systemctl_cannot_give_refuse_the_run_with_nothing_written(tmp_path, run_module, systemd):
    systemd.fail = ["show", "--property=Id,ActiveState,UnitFileState", "--", "demo.service"]
    before = snapshot(tmp_path)
    failed, result = run_module(managed_files, _service_args(tmp_path))
    assert failed and "systemctl show demo.service failed (exit 1)" in result["msg"], result
    assert "nothing was written" in result["msg"] and snapshot(tmp_path) == before
