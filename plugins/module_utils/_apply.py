# -*- coding: utf-8 -*-
# Copyright: cpuinfer.llm contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Apply a validated plan all-or-nothing: knob writes, then file writes; on the first failure
everything this run wrote is put back, and the error says what could not be restored."""

from __future__ import absolute_import, division, print_function

from ansible_collections.cpuinfer.llm.plugins.module_utils._knobs import KnobError, UndoLog
from ansible_collections.cpuinfer.llm.plugins.module_utils._persist import PersistError, restore_file

__metaclass__ = type


class ApplyError(Exception):
    def __init__(self, message, unrestored):
        super(ApplyError, self).__init__(message)
        self.unrestored = unrestored

    def describe(self):
        if not self.unrestored:
            return "%s; every value written before it was put back" % self
        return "%s; could NOT restore: %s" % (self, "; ".join("%s (%s)" % pair for pair in self.unrestored))


def apply_plan(root, knob_writes, file_writes=()):
    """knob_writes: (path, new, previous) triples; file_writes: (path, new_text or None to remove,
    previous_text or None when absent)."""
    undo = UndoLog(root)
    files_done = []
    try:
        for relative, new, previous in knob_writes:
            undo.write(relative, new, previous)
        for relative, new_text, previous_text in file_writes:
            restore_file(root, relative, new_text)
            files_done.append((relative, previous_text))
    except (KnobError, PersistError) as exc:
        unrestored = undo.rollback()
        for relative, previous_text in reversed(files_done):
            try:
                restore_file(root, relative, previous_text)
            except PersistError as restore_exc:
                unrestored.append((relative, str(restore_exc)))
        raise ApplyError(str(exc), unrestored)


def render_values(values):
    """A stable 'key = value' text for diff output."""
    return "".join("%s = %s\n" % (key, values[key]) for key in sorted(values))


class Step:
    """One change and how to take it back."""

    def __init__(self, describe, do, undo):
        self.describe, self.do, self.undo = describe, do, undo


def run_steps(steps, errors):
    """Run steps in order; on the first that raises one of errors, undo the earlier ones in reverse."""
    done = []
    for step in steps:
        try:
            step.do()
        except errors as exc:
            unrestored = []
            for earlier in reversed(done):
                try:
                    earlier.undo()
                except errors as undo_exc:
                    unrestored.append((earlier.describe, str(undo_exc)))
            raise ApplyError("%s: %s" % (step.describe, exc), unrestored)
        done.append(step)
