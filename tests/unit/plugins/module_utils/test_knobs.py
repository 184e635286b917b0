import pytest

from ansible_collections.cpuinfer.llm.plugins.module_utils import _knobs
from ansible_collections.cpuinfer.llm.plugins.module_utils._apply import ApplyError, apply_plan
from ansible_collections.cpuinfer.llm.plugins.module_utils._knobs import KnobError, UndoLog, parse_selection, read_knob

from kernel_tree import write_tree


def test_parse_selection():
    assert parse_selection("always [madvise] never") == ("madvise", ["always", "madvise", "never"])
    assert parse_selection("[always] defer defer+madvise madvise never")[0] == "always"
    assert parse_selection("always madvise never")[0] is None


def test_paths_cannot_leave_the_root(tmp_path):
    with pytest.raises(KnobError, match="leaves the root"):
        read_knob(str(tmp_path), "/sys/../../etc/passwd")


def test_read_missing_names_the_file(tmp_path):
    with pytest.raises(KnobError, match="sys/nothing"):
        read_knob(str(tmp_path), "/sys/nothing")


def test_undo_log_restores_in_reverse_order(tmp_path):
    write_tree(tmp_path, {"/k/a": "1", "/k/b": "2"})
    undo = UndoLog(str(tmp_path))
    undo.write("/k/a", "10", "1")
    undo.write("/k/b", "20", "2")
    assert read_knob(str(tmp_path), "/k/a") == "10"
    assert undo.rollback() == []
    assert read_knob(str(tmp_path), "/k/a") == "1"
    assert read_knob(str(tmp_path), "/k/b") == "2"


def test_apply_plan_rolls_back_knobs_and_files_on_a_refused_write(tmp_path, monkeypatch):
    write_tree(tmp_path, {"/k/a": "1", "/k/b": "2", "/etc/x.conf": "old\n"})
    real_write = _knobs.write_knob

    def refuse_b(root, relative, value):
        if relative == "/k/b" and value == "20":
            raise KnobError("cannot write /k/b: Invalid argument")
        real_write(root, relative, value)

    monkeypatch.setattr(_knobs, "write_knob", refuse_b)
    with pytest.raises(ApplyError) as caught:
        apply_plan(str(tmp_path), [("/k/a", "10", "1"), ("/k/b", "20", "2")], [("/etc/x.conf", "new\n", "old\n")])
    assert "put back" in caught.value.describe()
    assert read_knob(str(tmp_path), "/k/a") == "1"
    assert (tmp_path / "etc/x.conf").read_text() == "old\n"


def test_apply_plan_removes_a_file_it_created_when_a_later_file_fails(tmp_path):
    write_tree(tmp_path, {"/k/a": "1"})
    write_tree(tmp_path, {"/blocked": "a file where a directory is needed"})
    with pytest.raises(ApplyError):
        apply_plan(str(tmp_path), [("/k/a", "2", "1")], [("/etc/new.conf", "x\n", None), ("/blocked/f.conf", "y\n", None)])
    assert not (tmp_path / "etc/new.conf").exists()
    assert read_knob(str(tmp_path), "/k/a") == "1"
