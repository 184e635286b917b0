"""The one undo path: every way a module body can end early puts back what the journal holds."""

import pytest

from ansible_collections.cpuinfer.llm.plugins.module_utils import _knobs, _runner
from ansible_collections.cpuinfer.llm.plugins.module_utils._knobs import KnobError, read_knob
from ansible_collections.cpuinfer.llm.plugins.module_utils._runner import (
    Journal,
    Refused,
    file_step,
    knob_step,
    refuse_if,
    run_module,
)

from kernel_tree import full_snapshot, snapshot, write_tree


class Ended(Exception):
    pass


class FakeModule:
    """Just what run_module uses of AnsibleModule."""

    _name = "fake"

    def __init__(self, check_mode=False):
        self.check_mode = check_mode
        self.ended = None

    def fail_json(self, **result):
        self.ended = ("failed", result)
        raise Ended()

    def exit_json(self, **result):
        self.ended = ("ok", result)
        raise Ended()


def run(body, check_mode=False):
    module = FakeModule(check_mode)
    real = _runner._module, _runner._load_params
    _runner._module, _runner._load_params = (lambda spec: module), dict
    try:
        with pytest.raises(Ended):
            run_module({}, body)
    finally:
        _runner._module, _runner._load_params = real
    return module.ended


@pytest.fixture
def tree(tmp_path):
    write_tree(tmp_path, {"/k/a": "1", "/k/b": "2", "/etc/x.conf": "old\n"})
    return str(tmp_path)


def two_knobs_and_a_file(root):
    return [knob_step(root, "/k/a", "10", "1"), knob_step(root, "/k/b", "20", "2"),
            file_step(root, "/etc/x.conf", "new\n", "old\n"), file_step(root, "/etc/new.conf", "n\n", None)]


@pytest.mark.parametrize("failure", [
    KnobError("cannot write /k/c: Invalid argument"),  # a kernel refusal after the writes
    TypeError("'int' object is not iterable"),  # a defect after the writes
    Refused("invalid request, nothing written: x"),  # a refusal after the writes
])
def test_any_failure_after_writes_puts_everything_back(tree, failure):
    before = snapshot(tree)

    def body(module, journal):
        journal.apply(two_knobs_and_a_file(tree))
        assert read_knob(tree, "/k/a") == "10"
        raise failure

    outcome, result = run(body)
    assert outcome == "failed" and snapshot(tree) == before
    assert "every change made before it was put back" in result["msg"]
    assert ("exception" in result) == isinstance(failure, TypeError)  # a traceback only for defects


def kernel_refuses(monkeypatch, path, value, reason):
    """The kernel says no to writing value to path, and yes to everything else."""
    real = _knobs.write_knob

    def write(root, relative, written):
        if relative == path and written == value:
            raise KnobError("cannot write %s: %s" % (path, reason))
        real(root, relative, written)

    monkeypatch.setattr(_knobs, "write_knob", write)


def test_a_refused_step_names_itself_and_undoes_the_earlier_ones(tree, monkeypatch):
    before = snapshot(tree)
    kernel_refuses(monkeypatch, "/k/b", "20", "Invalid argument")
    outcome, result = run(lambda module, journal: journal.apply(two_knobs_and_a_file(tree)))
    assert outcome == "failed" and snapshot(tree) == before
    assert result["msg"].startswith("write /k/b = 20: cannot write /k/b: Invalid argument;")


def test_what_cannot_be_put_back_is_named(tree, monkeypatch):
    kernel_refuses(monkeypatch, "/k/a", "1", "Device or resource busy")  # the undo of /k/a

    def body(module, journal):
        journal.apply(two_knobs_and_a_file(tree))
        raise KnobError("later")

    outcome, result = run(body)
    assert "could NOT put back: write /k/a = 10 (cannot write /k/a: Device or resource busy)" in result["msg"]
    assert read_knob(tree, "/k/b") == "2"  # the rest was put back all the same


def test_check_mode_carries_out_nothing(tree):
    before = snapshot(tree)

    def body(module, journal):
        journal.apply(two_knobs_and_a_file(tree))
        return dict(changed=True)

    outcome, result = run(body, check_mode=True)
    assert outcome == "ok" and snapshot(tree) == before


def test_a_refusal_before_any_write_says_nothing_was_written(tree):
    outcome, result = run(lambda module, journal: refuse_if(["a is wrong", "b is wrong"]))
    assert result == {"msg": "invalid request, nothing written: a is wrong; b is wrong"}

    def unreadable(module, journal):
        raise KnobError("cannot read /k/z")

    outcome, result = run(unreadable)
    assert result["msg"] == "cannot read /k/z; nothing was written"


def test_journal_records_only_what_was_done(tree):
    journal = Journal()
    journal.apply([knob_step(tree, "/k/a", "5", "1")])
    assert journal.changes == ["write /k/a = 5"]
    assert journal.rollback() == [] and journal.changes == []


def test_a_file_step_creates_the_directories_it_needs_and_its_undo_removes_them(tree):
    """A run that failed once left behind every directory makedirs had made for its drop-ins."""
    before = full_snapshot(tree)

    def body(dummy_module, journal):
        journal.apply([file_step(tree, "/etc/sysctl.d/deeper/90-x.conf", "a = 1\n", None)])
        assert read_knob(tree, "/etc/sysctl.d/deeper/90-x.conf") == "a = 1"
        raise KnobError("a later write failed")

    outcome, result = run(body)
    assert outcome == "failed" and "every change made before it was put back" in result["msg"]
    assert full_snapshot(tree) == before


def test_a_file_step_whose_write_fails_removes_the_directories_it_made(tree, monkeypatch):
    before = full_snapshot(tree)

    def refuse(*dummy, **keywords):
        raise OSError(28, "No space left on device")
    monkeypatch.setattr(_runner._persist.tempfile, "mkstemp", refuse)

    def body(dummy_module, journal):
        journal.apply([file_step(tree, "/etc/tmpfiles.d/x.conf", "w /x - - - - 1\n", None)])

    outcome, result = run(body)
    assert outcome == "failed" and "No space left on device" in result["msg"] and "nothing was written" in result["msg"]
    assert full_snapshot(tree) == before


def test_finish_runs_only_after_success_and_never_after_a_rollback(tree):
    finished = []
    step = _runner.Step("remove /k/x", lambda: None, lambda: None, lambda: finished.append("x"))
    journal = Journal()
    journal.apply([step])
    assert journal.rollback() == [] and journal.finish() == [] and finished == []
    journal.apply([step])
    assert journal.finish() == [] and finished == ["x"]
    assert journal.finish() == [] and finished == ["x"]  # once


def test_a_finish_that_fails_is_named_and_the_change_stands(tree):
    def fails():
        raise OSError("busy")

    journal = Journal()
    journal.apply([_runner.Step("remove /k/x", lambda: None, lambda: None, fails)])
    assert journal.finish() == ["remove /k/x (busy)"] and journal.changes == []


def test_check_mode_finishes_nothing(tree):
    finished = []
    journal = Journal(check_mode=True)
    journal.apply([_runner.Step("remove /k/x", lambda: None, lambda: None, lambda: finished.append("x"))])
    assert journal.finish() == [] and finished == []
