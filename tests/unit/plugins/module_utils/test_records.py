import hashlib
import os

import pytest

from ansible_collections.cpuinfer.llm.plugins.module_utils import _records
from ansible_collections.cpuinfer.llm.plugins.plugin_utils._filter_records import record_current
from ansible_collections.cpuinfer.llm.plugins.module_utils._persist import PersistError


def _put(root, relative, data, mode=0o644):
    path = root / relative.lstrip("/")
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(data)
    os.chmod(str(path), mode)


def _expected(data, mode):
    return {"sha256": hashlib.sha256(data).hexdigest(), "mode": mode, "uid": os.getuid(), "gid": os.getgid()}


def test_a_binary_file_larger_than_a_chunk_is_hashed_whole(tmp_path, monkeypatch):
    monkeypatch.setattr(_records, "_CHUNK", 7)
    data = bytes(range(256)) * 3 + b"GGUF\xff\xfe"  # not UTF-8: hashed as bytes, never decoded
    _put(tmp_path, "/models/m.gguf", data, 0o444)
    assert _records.records(str(tmp_path), ["/models/m.gguf"]) == {"/models/m.gguf": _expected(data, "0444")}


def test_a_text_record_is_current_for_the_filter_that_compares_it_with_what_a_play_would_write(tmp_path):
    text = "naïve {}\n"
    _put(tmp_path, "/state/facts.json", text.encode("utf-8"), 0o640)
    found = _records.records(str(tmp_path), ["/state/facts.json"])
    uid, gid = os.getuid(), os.getgid()
    assert record_current(found, "/state/facts.json", text, "0640", uid, gid)
    assert not record_current(found, "/state/facts.json", text + " ", "0640", uid, gid)


def test_a_directory_stands_for_its_regular_files_and_a_missing_name_is_none(tmp_path):
    _put(tmp_path, "/state/a.json", b"{}\n", 0o640)
    _put(tmp_path, "/state/sub/b.json", b"deeper\n")
    assert _records.records(str(tmp_path), ["/state", "/absent.json", "/no/dir"]) == {
        "/state/a.json": _expected(b"{}\n", "0640"), "/absent.json": None, "/no/dir": None}


def test_something_else_than_a_file_is_refused_by_name(tmp_path):
    _put(tmp_path, "/target", b"x")
    os.symlink(str(tmp_path / "target"), str(tmp_path / "link"))
    with pytest.raises(PersistError, match="link is neither a file nor a directory"):
        _records.records(str(tmp_path), ["/link"])


def test_problems_name_each_relative_or_climbing_path():
    assert _records.problems("report", ["/ok", "rel/x", "/a/../b"]) == [
        "report: 'rel/x' is not an absolute path below / without '..' or NUL bytes",
        "report: '/a/../b' is not an absolute path below / without '..' or NUL bytes"]
