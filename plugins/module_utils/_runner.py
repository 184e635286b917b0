# -*- coding: utf-8 -*-
# Copyright: cpuinfer.llm contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The one way every module of the collection runs, writes and ends.

A module's body gets a Journal and returns its result. Every change goes through the journal
with the way to take it back. Whatever ends the body early - a refused request, a kernel refusal,
a defect - the runner undoes every change the journal holds, newest first, and ends the run with
fail_json saying what was put back. A body never calls fail_json or exit_json itself, so no module
can forget the undo (tests/unit/plugins/test_module_shape.py keeps it so). In check mode the
journal carries out nothing: a module plans its steps the same way in both modes."""

from __future__ import absolute_import, division, print_function

import traceback

from ansible.module_utils.basic import AnsibleModule, _load_params
from ansible.module_utils.six.moves.collections_abc import Mapping
from ansible_collections.cpuinfer.llm.plugins.module_utils._errors import HostError
from ansible_collections.cpuinfer.llm.plugins.module_utils import _knobs, _persist
from ansible_collections.cpuinfer.llm.plugins.module_utils._decimal import is_signed_decimal

__metaclass__ = type


class Refused(HostError):
    """The request cannot be carried out as given. result: extra keys for the failed result."""

    def __init__(self, message, **result):
        super(Refused, self).__init__(message)
        self.result = result


def refuse_if(problems):
    """Raise one Refused naming every problem at once, so a user fixes them in one go."""
    if problems:
        raise Refused("invalid request, nothing written: " + "; ".join(problems))


class StepFailed(HostError):
    """A change the host refused while the journal was being carried out; cause: the refusal."""

    def __init__(self, message, cause):
        super(StepFailed, self).__init__(message)
        self.cause = cause


class Step:
    """One change and how to take it back; finish, when given, completes it once the whole run succeeded
    and nothing will be taken back (deleting what a removal set aside)."""

    def __init__(self, describe, do, undo, finish=None):
        self.describe, self.do, self.undo, self.finish = describe, do, undo, finish


def knob_step(root, relative, value, previous):
    return Step("write %s = %s" % (relative, value),
                lambda: _knobs.write_knob(root, relative, value),
                lambda: _knobs.write_knob(root, relative, previous))


def file_step(root, relative, text, previous_text):
    """text None removes the file; previous_text None: it did not exist. Directories missing above the
    file are created by the step and removed by its undo (or at once, when the write fails)."""
    created = []

    def do():
        if text is not None:
            created[:] = _persist.create_parents(root, relative)
        try:
            _persist.restore_file(root, relative, text)
        except Exception:
            _persist.remove_directories(root, created)
            raise

    def undo():
        _persist.restore_file(root, relative, previous_text)
        _persist.remove_directories(root, created)

    return Step("%s %s" % ("remove" if text is None else "write", relative), do, undo)


class Journal:
    """The changes of one module run, kept so that they can be taken back as a unit."""

    def __init__(self, check_mode=False):
        self.check_mode = check_mode
        self._done = []
        self._finishing = []

    @property
    def changes(self):
        return [describe for describe, dummy in self._done]

    def apply(self, steps):
        """Carry out the steps in order, each recorded once done; in check mode none of them."""
        if self.check_mode:
            return
        for step in steps:
            self.run(step)

    def run(self, step):
        """One step now, check mode or not: only for steps that must happen to plan the rest
        (mounting resctrl); a module calls it outside check mode."""
        try:
            step.do()
        except HostError as exc:
            raise StepFailed("%s: %s" % (step.describe, exc), exc)
        except (IOError, OSError) as exc:
            raise StepFailed("%s: %s" % (step.describe, exc.strerror or exc), exc)
        self._done.append((step.describe, step.undo))
        if step.finish is not None:
            self._finishing.append((step.describe, step.finish))

    def finish(self):
        """After the run succeeded: each done step's finish, in order; returns what failed, as
        'change (reason)'. The changes stand either way (a failure leaves a set-aside copy behind)."""
        failures, self._done = [], []
        for describe, finish in self._finishing:
            try:
                finish()
            except Exception as exc:  # pylint: disable=broad-except
                failures.append("%s (%s)" % (describe, exc))
        self._finishing = []
        return failures

    def rollback(self):
        """Undo newest first; returns what could not be put back, as 'change (reason)'."""
        failures, self._finishing = [], []
        while self._done:
            describe, undo = self._done.pop()
            try:
                undo()
            except Exception as exc:  # pylint: disable=broad-except
                failures.append("%s (%s)" % (describe, exc))
        return failures


def render_values(values):
    """A stable 'key = value' text for diff output."""
    return "".join("%s = %s\n" % (key, values[key]) for key in sorted(values))


def _undo_note(journal):
    had_changes = bool(journal.changes)
    failures = journal.rollback()
    if failures:
        return "could NOT put back: " + "; ".join(failures)
    if had_changes:
        return "every change made before it was put back"
    return "nothing was written"


def _module(argument_spec):
    """AnsibleModule with check mode, also where ansible-core's own validation crashes instead of
    refusing: a number for a dict option with suboptions (TypeError, ansible/ansible#81631), YAML's
    .inf for an int option (OverflowError). Then the arguments are read without types, and the
    refusal says which option and why."""
    try:
        return AnsibleModule(argument_spec=argument_spec, supports_check_mode=True)
    except (TypeError, AttributeError, OverflowError, ValueError) as exc:
        crash = "%s: %s" % (type(exc).__name__, exc)
    loose = AnsibleModule(argument_spec=dict((name, dict(type="raw")) for name in argument_spec),
                          supports_check_mode=True)
    wrong = list(_not_dicts(argument_spec, loose.params))
    loose.fail_json(msg="invalid request, nothing written: " + (
        "; ".join(wrong) or "an argument does not fit its type (ansible-core's validation failed with %s)" % crash))


def _not_dicts(argument_spec, raw, prefix=""):
    """'option must be a dict of ...' for every option with suboptions, at any depth, given something else
    (in a list of dicts, each element), named by its whole path: thp.khugepaged, files[0]."""
    for name, spec in sorted(argument_spec.items()):
        value = raw.get(name) if isinstance(raw, Mapping) else None
        if "options" not in spec or value is None:
            continue
        if spec.get("type") == "list":
            items = [("%s%s[%d]" % (prefix, name, index), item) for index, item in enumerate(value)] \
                if isinstance(value, list) else []
        else:
            items = [(prefix + name, value)]
        for path, item in items:
            if isinstance(item, Mapping):
                yield from _not_dicts(spec["options"], item, path + ".")
            else:
                yield "%s must be a dict of %s, not %r" % (path, ", ".join(sorted(spec["options"])), item)


def _int_values(argument_spec, raw, prefix=""):
    """(option, value as given) for every option typed int (or a list of int), suboptions included."""
    for name, spec in sorted(argument_spec.items()):
        value = (raw or {}).get(name) if isinstance(raw, Mapping) else None
        if value is None:
            continue
        if spec.get("type") == "int":
            yield prefix + name, value
        elif spec.get("type") == "list" and spec.get("elements") == "int" and isinstance(value, list):
            for item in value:
                yield prefix + name, item
        elif spec.get("options"):
            yield from _int_values(spec["options"], value, prefix + name + ".")


def numbers_as_given(argument_spec, raw):
    """What ansible-core's int conversion lets through but should not: true/false (bool is a
    subclass of int, so 'level: no' would reach the kernel as False) and text that Python's int()
    reads but no operator means: digits of other scripts (a fullwidth '２' is 2), '1_0' (10)."""
    problems = []
    for name, value in _int_values(argument_spec, raw):
        if isinstance(value, bool):
            problems.append("%s must be a number, not true or false" % name)
        elif isinstance(value, str) and not is_signed_decimal(value.strip()):
            problems.append("%s %r: write the number with the digits 0-9 only" % (name, value))
    return problems


def run_module(argument_spec, body):
    """The whole main() of a module: body(module, journal) -> result dict. Ends the run either way."""
    module = _module(argument_spec)
    journal = Journal(module.check_mode)
    try:
        refuse_if(numbers_as_given(argument_spec, _load_params()))
        result = body(module, journal)
    except Refused as exc:
        # a refusal normally comes before the first change and says so itself
        note = _undo_note(journal)
        message = str(exc) if note == "nothing was written" else "%s; %s" % (exc, note)
        module.fail_json(msg=message, **exc.result)
    except HostError as exc:
        module.fail_json(msg="%s; %s" % (exc, _undo_note(journal)))
    except Exception as exc:  # pylint: disable=broad-except
        # a defect, not an answer: the traceback goes with it, the host is put back all the same
        detail = traceback.format_exc()
        module.fail_json(msg="internal error in %s (%s: %s); %s" % (
            module._name, type(exc).__name__, exc, _undo_note(journal)), exception=detail)
    for failure in journal.finish():
        module.warn("done, but not cleaned up: %s" % failure)
    module.exit_json(**result)
