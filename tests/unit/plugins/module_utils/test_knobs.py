import pytest

from ansible_collections.cpuinfer.llm.plugins.module_utils._knobs import KnobError, parse_selection, read_knob, write_knob


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


def test_write_names_the_refused_value(tmp_path):
    with pytest.raises(KnobError, match="cannot open"):
        write_knob(str(tmp_path), "/k/missing", "1")
