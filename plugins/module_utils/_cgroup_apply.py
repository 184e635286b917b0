# -*- coding: utf-8 -*-
# Copyright: cpuinfer.llm contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Carry out a cgroup plan step by step; on the first refused step undo every earlier one."""

from __future__ import absolute_import, division, print_function

from ansible_collections.cpuinfer.llm.plugins.module_utils import _cgroupfs
from ansible_collections.cpuinfer.llm.plugins.module_utils._apply import ApplyError
from ansible_collections.cpuinfer.llm.plugins.module_utils import _knobs
from ansible_collections.cpuinfer.llm.plugins.module_utils._knobs import KnobError, read_knob

__metaclass__ = type


class Step:
    def __init__(self, describe, do, undo):
        self.describe, self.do, self.undo = describe, do, undo


def make_group(root, group):
    return Step("create %s" % group,
                lambda: _cgroupfs.make_group(root, group),
                lambda: _cgroupfs.remove_group(root, group))


def enable_controller(root, group, controller):
    relative = _cgroupfs.file_relative(group, "cgroup.subtree_control")
    return Step("enable %s in %s" % (controller, group or "the root"),
                lambda: _knobs.write_knob(root, relative, "+" + controller),
                lambda: _knobs.write_knob(root, relative, "-" + controller))


def set_value(root, group, setting, new, previous):
    relative = _cgroupfs.file_relative(group, setting.filename)

    def do():
        _knobs.write_knob(root, relative, setting.line(new))
        if setting.filename == "cpuset.cpus.partition":
            shown = read_knob(root, relative)
            if "invalid" in shown:  # the kernel takes the write, then explains its refusal here
                undo()
                raise KnobError("the kernel refused partition %r for %s: %s" % (new, group, shown))

    def undo():
        if previous is not None:  # None: a group this run created, removed as a whole on undo
            _knobs.write_knob(root, relative, setting.line(previous))

    return Step("%s = %s" % (setting.label, new), do, undo)


def move_process(root, group, pid, origin):
    return Step("move %d into %s" % (pid, group),
                lambda: _knobs.write_knob(root, _cgroupfs.file_relative(group, "cgroup.procs"), str(pid)),
                lambda: _knobs.write_knob(root, _cgroupfs.file_relative(origin, "cgroup.procs"), str(pid)))


def run_steps(steps):
    done = []
    for step in steps:
        try:
            step.do()
        except (KnobError, _cgroupfs.CgroupError) as exc:
            unrestored = []
            for earlier in reversed(done):
                try:
                    earlier.undo()
                except (KnobError, _cgroupfs.CgroupError) as undo_exc:
                    unrestored.append((earlier.describe, str(undo_exc)))
            raise ApplyError("%s: %s" % (step.describe, exc), unrestored)
        done.append(step)
