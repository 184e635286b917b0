# -*- coding: utf-8 -*-
# Copyright: cpuinfer.llm contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The steps of a cgroup plan, each with how to take it back (the runner's journal carries them out)."""

from __future__ import absolute_import, division, print_function

from ansible_collections.cpuinfer.llm.plugins.module_utils import _cgroupfs
from ansible_collections.cpuinfer.llm.plugins.module_utils import _knobs
from ansible_collections.cpuinfer.llm.plugins.module_utils._knobs import KnobError, read_knob
from ansible_collections.cpuinfer.llm.plugins.module_utils._runner import Step

__metaclass__ = type


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
