import os

import pytest

from ansible_collections.cpuinfer.llm.plugins.module_utils import _persist


def test_file_state_reads_content_mode_and_owner(tmp_path):
    (tmp_path / "etc").mkdir()
    path = tmp_path / "etc" / "x.conf"
    path.write_text("a = 1\n")
    os.chmod(str(path), 0o640)
    state = _persist.file_state(str(tmp_path), "/etc/x.conf")
    assert state == _persist.FileState("a = 1\n", 0o640, os.getuid(), os.getgid())
    assert _persist.file_state(str(tmp_path), "/etc").content is None
    assert _persist.file_state(str(tmp_path), "/etc/missing") is None


def test_a_file_that_is_not_text_reads_as_empty_so_it_is_replaced(tmp_path):
    (tmp_path / "blob").write_bytes(b"\xff\xfe\x00")
    assert _persist.file_state(str(tmp_path), "/blob").content == ""


def test_a_link_is_neither_read_nor_replaced(tmp_path):
    os.symlink("/etc/passwd", str(tmp_path / "link"))
    with pytest.raises(_persist.PersistError, match="neither a file nor a directory"):
        _persist.file_state(str(tmp_path), "/link")


def test_put_state_round_trips_files_and_directories(tmp_path):
    root = str(tmp_path)
    directory = _persist.FileState(None, 0o700, os.getuid(), os.getgid())
    text = _persist.FileState("x\n", 0o600, os.getuid(), os.getgid())
    _persist.put_state(root, "/d", directory)
    _persist.put_state(root, "/d/f", text)
    assert _persist.file_state(root, "/d") == directory
    assert _persist.file_state(root, "/d/f") == text
    _persist.put_state(root, "/d/f", None)
    _persist.put_state(root, "/d", None)
    assert not (tmp_path / "d").exists()


def test_put_state_none_keeps_a_directory_that_is_not_empty(tmp_path):
    (tmp_path / "d").mkdir()
    (tmp_path / "d" / "someone-elses").write_text("")
    with pytest.raises(_persist.PersistError, match="cannot set"):
        _persist.put_state(str(tmp_path), "/d", None)
    assert (tmp_path / "d" / "someone-elses").exists()


def test_replace_file_never_leaves_a_temporary_file(tmp_path):
    (tmp_path / "a").mkdir()
    _persist.replace_file(str(tmp_path), "/a/b.conf", "v\n", 0o644)
    assert sorted(os.listdir(str(tmp_path / "a"))) == ["b.conf"]


@pytest.mark.parametrize("content", [5, None, "lone surrogate \udc80"])
def test_content_that_is_not_text_is_refused_before_a_temporary_file(tmp_path, content):
    """A tampered release record once put a number here: the write crashed and left .cpuinfer-* behind."""
    (tmp_path / "a").mkdir()
    with pytest.raises(_persist.PersistError, match="not text that UTF-8 can hold"):
        _persist.replace_file(str(tmp_path), "/a/b.conf", content, 0o644)
    assert os.listdir(str(tmp_path / "a")) == []


def test_a_failed_chown_leaves_no_temporary_file(tmp_path):
    (tmp_path / "a").mkdir()
    with pytest.raises(_persist.PersistError):
        _persist.replace_file(str(tmp_path), "/a/b.conf", "x", 0o644, uid=2 ** 40)
    assert os.listdir(str(tmp_path / "a")) == []


def test_replace_file_makes_no_directory(tmp_path):
    """Directories are steps of their own (create_parents), undone with the run."""
    with pytest.raises(_persist.PersistError, match="cannot write"):
        _persist.replace_file(str(tmp_path), "/a/b.conf", "v\n", 0o644)
    assert os.listdir(str(tmp_path)) == []


def test_create_parents_and_remove_them_again(tmp_path):
    (tmp_path / "etc").mkdir()
    created = _persist.create_parents(str(tmp_path), "/etc/a/b/c.conf")
    assert created == ["/etc/a", "/etc/a/b"] and (tmp_path / "etc/a/b").is_dir()
    _persist.remove_directories(str(tmp_path), created)
    assert os.listdir(str(tmp_path / "etc")) == []


def test_create_parents_takes_back_what_it_made_when_one_fails(tmp_path, monkeypatch):
    (tmp_path / "etc").mkdir()
    real_mkdir = os.mkdir

    def mkdir(path, mode=0o777):
        if path.endswith("/b"):
            raise OSError(28, "No space left on device")
        real_mkdir(path, mode)
    monkeypatch.setattr(os, "mkdir", mkdir)
    with pytest.raises(_persist.PersistError, match="cannot create .*/etc/a/b: No space left on device"):
        _persist.create_parents(str(tmp_path), "/etc/a/b/c.conf")
    assert os.listdir(str(tmp_path / "etc")) == []


def test_read_file_reads_bytes_that_are_not_utf8(tmp_path):
    (tmp_path / "x.conf").write_bytes(b"a\xff\n")
    assert _persist.read_file(str(tmp_path), "/x.conf") == "a\ufffd\n"


def test_missing_directories_are_listed_outermost_first(tmp_path):
    (tmp_path / "var/lib").mkdir(parents=True)
    missing = _persist.missing_directories(str(tmp_path), "/var/lib/cpuinfer/releases")
    assert missing == ["/var/lib/cpuinfer", "/var/lib/cpuinfer/releases"]
    assert _persist.missing_directories(str(tmp_path), "/var/lib") == []


@pytest.mark.parametrize("path", ["/etc/cpuinfer/llama-server/tiny.env", "/etc/systemd/system/cpuinfer-llama-a.service"])
def test_a_path_matches_where_matching_files_finds_it(tmp_path, path):
    patterns = ["/etc/systemd/system/cpuinfer-llama-*.service", "/etc/cpuinfer/llama-server/*"]
    target = tmp_path / path.lstrip("/")
    target.parent.mkdir(parents=True)
    target.write_text("x")
    assert _persist.path_matches(path, patterns) and _persist.matching_files(str(tmp_path), patterns) == [path]


@pytest.mark.parametrize("path", ["/etc/cpuinfer/llama-server/sub/tiny.env", "/etc/cpuinfer/llama-server/.hidden",
                                  "/etc/systemd/system/cpuinfer-llama-a.slice", "/etc/cpuinfer/llama-server"])
def test_a_path_does_not_match_where_glob_would_not_find_it(tmp_path, path):
    patterns = ["/etc/systemd/system/cpuinfer-llama-*.service", "/etc/cpuinfer/llama-server/*"]
    target = tmp_path / path.lstrip("/")
    target.parent.mkdir(parents=True, exist_ok=True)
    target.write_text("x")
    assert not _persist.path_matches(path, patterns) and _persist.matching_files(str(tmp_path), patterns) == []


@pytest.mark.parametrize("given,applier,why", [
    ("/etc/tmpfiles.d/x.conf", "systemd-tmpfiles", None),
    ("/usr/lib/sysctl.d/50-x.conf", "systemd-sysctl", None),
    ("/etc/tmpfiles.d/x.conf/", "systemd-tmpfiles", "ends in '/', a directory"),
    ("/etc/tmpfiles.d/x", "systemd-tmpfiles", "is not named *.conf"),
    ("/etc/tmpfiles.d/.conf", "systemd-tmpfiles", "is not named *.conf"),
    ("/etc/sysctl.d/x.conf", "systemd-tmpfiles", "is not directly in one of its directories"),
    ("/x.conf", "systemd-sysctl", "is not directly in one of its directories"),
])
def test_a_dropin_its_applier_never_reads_is_named_with_the_reason(given, applier, why):
    normal = given.rstrip("/")
    problem = _persist.unread_dropin_problem("dropin", given, normal, applier)
    if why is None:
        assert problem is None
    else:
        assert problem.startswith("dropin: %s %s; %s reads only *.conf files in " % (given, why, applier)), problem


def test_set_aside_keeps_a_tree_beside_itself_until_put_back_or_discarded(tmp_path):
    root = str(tmp_path)
    (tmp_path / "srv/models").mkdir(parents=True)
    (tmp_path / "srv/models/m.gguf").write_bytes(b"GGUF")
    aside = _persist.set_aside(root, "/srv/models")
    assert aside.startswith("/srv/.cpuinfer-removed-models.") and not (tmp_path / "srv/models").exists()
    assert (tmp_path / aside.lstrip("/") / "m.gguf").read_bytes() == b"GGUF"
    _persist.put_back(root, aside, "/srv/models")
    assert (tmp_path / "srv/models/m.gguf").read_bytes() == b"GGUF" and os.listdir(root + "/srv") == ["models"]
    _persist.discard(root, _persist.set_aside(root, "/srv/models"))
    assert os.listdir(root + "/srv") == []


def test_discard_removes_a_link_not_what_it_points_to(tmp_path):
    (tmp_path / "target").mkdir()
    (tmp_path / "target/keep").write_text("x")
    os.symlink("target", str(tmp_path / "link"))
    _persist.discard(str(tmp_path), _persist.set_aside(str(tmp_path), "/link"))
    assert sorted(os.listdir(str(tmp_path))) == ["target"] and (tmp_path / "target/keep").read_text() == "x"


def test_set_aside_of_what_is_not_there_is_a_persist_error(tmp_path):
    with pytest.raises(_persist.PersistError, match="cannot remove .*/gone"):
        _persist.set_aside(str(tmp_path), "/gone")


def test_set_aside_never_renames_over_an_earlier_copy(tmp_path):
    (tmp_path / "x.conf").write_text("keep")
    for attempt in range(100):
        (tmp_path / (".cpuinfer-removed-x.conf.%d.%d" % (os.getpid(), attempt))).write_text("earlier")
    with pytest.raises(_persist.PersistError, match="no free name"):
        _persist.set_aside(str(tmp_path), "/x.conf")
    assert (tmp_path / "x.conf").read_text() == "keep"
