#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright: cpuinfer.llm contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import absolute_import, division, print_function

__metaclass__ = type

DOCUMENTATION = r"""
module: kernel_settings
short_description: Transparent huge pages, perf_event_paranoid, sysctls and files in one module run, all or none
version_added: 1.0.0
description:
  - Does what M(cpuinfer.llm.thp), M(cpuinfer.llm.perf_paranoid) and M(cpuinfer.llm.sysctl) do, with
    their rules, in one module run. A converge that changes nothing pays one round trip for the three
    instead of three. Each part is optional; give at least one.
  - O(directories) and O(files), as M(cpuinfer.llm.managed_files) takes them, are written in the same
    run (a role's slices and units beside its kernel settings, one round trip for both). None of them
    may be a drop-in a part of this run writes.
  - Every part is read and checked before the first write, so a bad part refuses the whole run with
    nothing written. When a write fails, every change this run made, in any part, is put back.
  - Check mode reports what would change. The diff shows each part's runtime values and drop-in,
    headed by the part's name.
author: cpuinfer.llm maintainers (@cpuinfer)
options:
  thp:
    description: Transparent huge pages, as M(cpuinfer.llm.thp) takes them.
    type: dict
    suboptions:
      enabled:
        description: THP policy for anonymous memory.
        type: str
        choices: [always, madvise, never]
      defrag:
        description: When page faults may stall on compaction to get a huge page.
        type: str
        choices: [always, defer, defer+madvise, madvise, never]
      khugepaged:
        description: Settings of the khugepaged collapse daemon, by knob name (as M(cpuinfer.llm.thp)).
        type: dict
        suboptions:
          defrag:
            description: Whether khugepaged may compact memory (V(0) or V(1)).
            type: int
          pages_to_scan:
            description: Pages scanned per wake-up.
            type: int
          scan_sleep_millisecs:
            description: Sleep between scans.
            type: int
          alloc_sleep_millisecs:
            description: Sleep after a failed huge page allocation.
            type: int
          max_ptes_none:
            description: How many unmapped small pages a collapse may fill.
            type: int
      persistent:
        description: Also keep the values in C(/etc/tmpfiles.d/cpuinfer-thp.conf) for every boot.
        type: bool
        default: true
  perf_paranoid:
    description: C(kernel.perf_event_paranoid), as M(cpuinfer.llm.perf_paranoid) takes it (V(-1) only with its opt-in).
    type: dict
    suboptions:
      level:
        description: The wanted level, V(-1) to V(4). Required when O(perf_paranoid.state=present).
        type: int
      state:
        description: V(present) sets the level; V(absent) restores the recorded original and removes the drop-in.
        type: str
        choices: [present, absent]
        default: present
      allow_unrestricted:
        description: Must be V(true) to set V(-1). Prefer C(CAP_PERFMON) on the one service that needs counters.
        type: bool
        default: false
      persistent:
        description: Also keep the level in C(/etc/sysctl.d/90-cpuinfer-perf-paranoid.conf) for every boot.
        type: bool
        default: true
  sysctl:
    description: Other sysctls, as M(cpuinfer.llm.sysctl) takes them.
    type: dict
    suboptions:
      values:
        description: Sysctl keys (dotted) and their values.
        type: dict
        required: true
      dropin:
        description: The drop-in that persists the values.
        type: path
        default: /etc/sysctl.d/90-cpuinfer-tuning.conf
      missing:
        description: What a key this kernel lacks does (V(skip) leaves it out and reports it).
        type: str
        choices: [skip, fail]
        default: skip
      persistent:
        description: Also keep the values in O(sysctl.dropin) for every boot.
        type: bool
        default: true
extends_documentation_fragment:
  - cpuinfer.llm.kernel
  - cpuinfer.llm.managed_files
  - cpuinfer.llm.managed_files.absent
  - cpuinfer.llm.managed_files.units
"""

EXAMPLES = r"""
- name: The kernel settings of an inference host, one module run
  cpuinfer.llm.kernel_settings:
    thp:
      enabled: madvise
      defrag: never
    perf_paranoid:
      level: 2
    sysctl:
      values:
        kernel.sched_rt_runtime_us: 950000
        kernel.numa_balancing: 0

- name: Kernel settings and a slice on its CPUs, one module run
  cpuinfer.llm.kernel_settings:
    thp:
      enabled: madvise
    files:
      - path: /etc/systemd/system/inference.slice
        content: "[Slice]\nAllowedCPUs=2-7\n"
  register: tuned
"""

RETURN = r"""
units:
  description:
    - What the run did to O(units) (in check mode, would do) - C(reloaded) systemd, and the units C(enabled),
      C(disabled), C(started) and C(restarted).
  returned: always
  type: dict
  sample: {reloaded: true, enabled: [example.service], disabled: [], started: [example.service], restarted: []}
thp:
  description: What M(cpuinfer.llm.thp) returns (before, after, persistent_file, changed), for this part.
  returned: when O(thp) is given
  type: dict
  sample: {changed: false, before: {enabled: madvise, defrag: never}, after: {enabled: madvise, defrag: never}}
perf_paranoid:
  description: What M(cpuinfer.llm.perf_paranoid) returns (previous, level, original, honours_level_3, changed).
  returned: when O(perf_paranoid) is given
  type: dict
  sample: {changed: false, previous: 2, level: 2, original: 3, honours_level_3: true}
sysctl:
  description: What M(cpuinfer.llm.sysctl) returns (before, after, missing, persistent_file, changed).
  returned: when O(sysctl) is given
  type: dict
  sample: {changed: false, before: {kernel.numa_balancing: "0"}, after: {kernel.numa_balancing: "0"}, missing: []}
changed_paths:
  description: The directories and files of O(directories) and O(files) this run changed (in check mode, would change).
  returned: always
  type: list
  elements: str
  sample: [/etc/systemd/system/inference.slice]
"""

from ansible_collections.cpuinfer.llm.plugins.module_utils import (
    _managed_files,
    _perf_paranoid_settings,
    _sysctl_settings,
    _systemd_units,
    _thp_settings,
)
from ansible_collections.cpuinfer.llm.plugins.module_utils._errors import HostError
from ansible_collections.cpuinfer.llm.plugins.module_utils._paths import normal_path, within
from ansible_collections.cpuinfer.llm.plugins.module_utils._runner import Refused, refuse_if, run_module

PARTS = (("thp", _thp_settings), ("perf_paranoid", _perf_paranoid_settings), ("sysctl", _sysctl_settings))
ARGUMENT_SPEC = dict([(name, dict(type="dict", options=part.OPTIONS)) for name, part in PARTS],
                     root=dict(type="path", default="/"),
                     **dict(_managed_files.OPTIONS, **dict(_managed_files.ABSENT_OPTIONS, **_systemd_units.OPTIONS)))


class _Part:
    """The module as one part's converge sees it: that part's params (with root), warnings named by part."""

    def __init__(self, module, name, params):
        self._module, self._name, self.params = module, name, params
        self._diff, self.check_mode = module._diff, module.check_mode

    def warn(self, message):
        self._module.warn("%s: %s" % (self._name, message))


class _Planned:
    """A journal that only collects: every part plans before the first write."""

    def __init__(self):
        self.steps = []

    def apply(self, steps):
        self.steps.extend(steps)


def _diffs(name, diff):
    for entry in diff if isinstance(diff, list) else [dict(diff, before_header="", after_header="")]:
        yield dict(entry, before_header=("%s %s" % (name, entry["before_header"])).strip(),
                   after_header=("%s %s" % (name, entry["after_header"])).strip())


def _dropin_problems(params):
    """A part's drop-in that is another part's (given in this run or not: it would overwrite that part's
    file), a directory or file of the request on the drop-in of a part given in this run, or an absent path
    at or above such a drop-in (the run would write it, then remove it)."""
    owned, problems = {}, []
    for name, part in PARTS:
        path = part.dropin(params[name])
        if path in owned:
            problems.append("%s.dropin %s is %s's own drop-in" % (name, path, owned[path]))
        elif path is not None:
            owned[path] = name
    given = dict((path, name) for path, name in owned.items() if params[name] is not None)
    problems += ["%s: %s writes this drop-in" % (entry["path"], given[normal_path(entry["path"])])
                 for entry in params["directories"] + params["files"] if normal_path(entry["path"]) in given]
    return problems + ["absent %s: %s writes %s there" % (path, name, dropin) for path in params["absent"]
                       for dropin, name in sorted(given.items()) if normal_path(path) and within(dropin, normal_path(path))]


def converge(module, journal):
    params = module.params
    given = [(name, part) for name, part in PARTS if params[name] is not None]
    if not given and not params["directories"] and not params["files"] and not params["absent"] and not params["units"]:
        raise Refused("nothing to set: give thp, perf_paranoid, sysctl, directories, files, absent or units")
    refuse_if(_dropin_problems(params)
              + _systemd_units.unit_problems(params["root"], params["units"], _managed_files.request_paths(params)))
    planned, results = _Planned(), {}
    for name, part in given:
        try:
            results[name] = part.converge(_Part(module, name, dict(params[name], root=params["root"])), planned)
        except Refused as exc:
            # the part's own words name its options; the part's name says where they are
            raise Refused("%s: %s" % (name, exc), **exc.result)
        except HostError as exc:
            raise HostError("%s: %s" % (name, exc))
    written = _managed_files.plan(params, params["root"])
    units = _systemd_units.plan(module.run_command, params["units"], written.changed_paths)
    journal.apply(units.around(planned.steps + written.steps))
    diff = [entry for name, dummy in given for entry in _diffs(name, results[name].pop("diff", []))] + written.diffs
    diff += [units.diff] if units.diff else []
    result = dict(changed=bool(planned.steps or written.steps or units.steps), changed_paths=written.changed_paths,
                  units=units.actions, **results)
    if module._diff:
        result["diff"] = diff
    return result


def main():
    run_module(ARGUMENT_SPEC, converge)


if __name__ == "__main__":
    main()
