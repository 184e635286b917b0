import pytest

from ansible_collections.cpuinfer.llm.plugins.module_utils import _release
from ansible_collections.cpuinfer.llm.plugins.module_utils._persist import FileState

UNIT = "/etc/systemd/system/cpuinfer-llama-a.service"
ONE = {UNIT: FileState("threads=4", 0o644, 0, 0)}
TWO = {UNIT: FileState("threads=1", 0o644, 0, 0)}


def test_a_release_id_names_contents_modes_and_owners():
    assert _release.release_id(ONE) != _release.release_id(TWO)
    assert _release.release_id(ONE) != _release.release_id({UNIT: FileState("threads=4", 0o600, 0, 0)})
    assert _release.release_id(dict(ONE)) == _release.release_id(ONE) and len(_release.release_id(ONE)) == 12
    assert _release.release_id(None) is None


def test_a_record_round_trips():
    text = _release.encode_record(TWO, ONE, rolled_back_from="abc")
    assert _release.decode_record(text) == (TWO, ONE, "abc")
    assert _release.decode_record(_release.encode_record(ONE, None)) == (ONE, None, None)
    assert _release.decode_record(None) is None


@pytest.mark.parametrize("text", ["not json", '{"version": 2, "current": {}, "previous": null}', '{"version": 1}',
                                  '{"version": 1, "current": {"/a": {"content": "x"}}, "previous": null}', "[]"])
def test_a_record_this_code_did_not_write_is_unreadable(text):
    with pytest.raises(_release.RecordUnreadable):
        _release.decode_record(text)


def test_paths_that_differ_counts_absent_files():
    assert _release.paths_that_differ(ONE, TWO) == [UNIT]
    assert _release.paths_that_differ(ONE, dict(ONE, **{"/etc/x": FileState("", 0o644, 0, 0)})) == ["/etc/x"]
    assert _release.paths_that_differ(None, None) == []


def test_recording_keeps_the_release_before_and_an_unchanged_converge_keeps_the_record():
    assert _release.plan_record(ONE, None) == (ONE, None, None)
    assert _release.plan_record(TWO, (ONE, None, None)) == (TWO, ONE, None)
    assert _release.plan_record(TWO, (TWO, ONE, None)) is None


def test_going_back_twice_changes_nothing_the_second_time():
    target, record = _release.plan_rollback(TWO, (TWO, ONE, None))
    assert target == ONE and record == (ONE, None, _release.release_id(TWO))
    assert _release.plan_rollback(ONE, record) == (ONE, record)


def test_a_converge_that_failed_before_its_record_goes_back_to_the_last_recorded_release():
    half_written = {UNIT: FileState("threads=2", 0o644, 0, 0)}
    assert _release.plan_rollback(half_written, (TWO, ONE, None)) == (TWO, (TWO, ONE, None))


@pytest.mark.parametrize("record, reason", [(None, "no release has been recorded"), ((ONE, None, None), "only one release")])
def test_nothing_to_go_back_to_is_said(record, reason):
    target, why = _release.plan_rollback(ONE, record)
    assert target is None and reason in why
