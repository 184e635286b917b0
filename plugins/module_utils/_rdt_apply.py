# -*- coding: utf-8 -*-
# Copyright: cpuinfer.llm contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The steps of a checked rdt_cat plan: group, schemata lines, cpus, tasks, monitor groups.
Each schemata write is followed by info/last_cmd_status; the runner's journal undoes a refused run."""

from __future__ import absolute_import, division, print_function

from ansible_collections.cpuinfer.llm.plugins.module_utils import _knobs
from ansible_collections.cpuinfer.llm.plugins.module_utils import _resctrl as resctrl
from ansible_collections.cpuinfer.llm.plugins.module_utils._rdt_plan import normalised
from ansible_collections.cpuinfer.llm.plugins.module_utils._runner import Step

__metaclass__ = type


class ResctrlWriter:
    def __init__(self, root):
        self.root = root

    def _write(self, relative, text):
        _knobs.write_knob(self.root, relative, text)

    def _write_checked(self, relative, text):
        """A schemata write the kernel may accept at write() yet explain in last_cmd_status."""
        try:
            self._write(relative, text)
        except _knobs.KnobError as exc:
            raise resctrl.ResctrlError("%s (last_cmd_status: %s)" % (exc, resctrl.last_cmd_status(self.root)))
        status = resctrl.last_cmd_status(self.root)
        if status != "ok":
            raise resctrl.ResctrlError("the kernel refused %r: %s" % (text.strip(), status))

    def _group_of(self, pid):
        for group in resctrl.groups(self.root):
            if pid in resctrl.read_group(self.root, group)["tasks"]:
                return group
        return ""

    def plan(self, name, exists, wanted, current, cpus, pids, monitor):
        steps = []
        if not exists:
            steps.append(Step("create group %s" % name, lambda: resctrl.make_group(self.root, name),
                              lambda: resctrl.remove_group(self.root, name)))
        schemata = resctrl.group_relative(name, "schemata")
        for resource, line in sorted(wanted.items()):
            previous = current["schemata"].get(resource)
            if previous is not None and normalised(resource, previous) == normalised(resource, line):
                continue
            new_text = resctrl.format_schemata_line(resource, line)
            old_text = resctrl.format_schemata_line(resource, previous) if previous else None
            steps.append(Step("schemata %s" % new_text.strip(),
                              (lambda t=new_text: self._write_checked(schemata, t)),
                              (lambda t=old_text: t and self._write(schemata, t))))
        if cpus is not None and cpus != current["cpus"]:
            relative = resctrl.group_relative(name, "cpus_list")
            steps.append(Step("cpus_list %s" % cpus, lambda: self._write(relative, cpus),
                              lambda: exists and self._write(relative, current["cpus"] or "\n")))
        for pid in pids:
            if pid not in current["tasks"]:
                origin = self._group_of(pid)
                steps.append(Step("task %d" % pid,
                                  (lambda p=pid: self._write(resctrl.group_relative(name, "tasks"), str(p))),
                                  (lambda p=pid, o=origin: self._write(resctrl.group_relative(o, "tasks"), str(p)))))
        for mon, watched in sorted(monitor.items()):
            mon_dir = "%s/mon_groups/%s" % (name, mon) if name else "mon_groups/%s" % mon
            if not _knobs.knob_exists(self.root, resctrl.group_relative(mon_dir)):
                steps.append(Step("create monitor group %s" % mon_dir, (lambda d=mon_dir: resctrl.make_group(self.root, d)),
                                  (lambda d=mon_dir: resctrl.remove_group(self.root, d))))
            for pid in watched:
                tasks = resctrl.group_relative(mon_dir, "tasks")
                if not _knobs.knob_exists(self.root, tasks) or int(pid) not in [int(t) for t in _knobs.read_knob(self.root, tasks).split()]:
                    steps.append(Step("watch task %s in %s" % (pid, mon_dir),
                                      (lambda p=pid, t=tasks: self._write(t, str(p))),
                                      (lambda p=pid: self._write(resctrl.group_relative(name, "tasks"), str(p)))))
        return steps

    def remove_step(self, name):
        """Removing a group moves its tasks back; the schemata it had cannot be put back by undo."""
        return Step("remove group %s" % name, lambda: resctrl.remove_group(self.root, name),
                    lambda: resctrl.make_group(self.root, name))
