#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright: cpuinfer.llm contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import absolute_import, division, print_function

__metaclass__ = type

DOCUMENTATION = r"""
module: perf_paranoid
short_description: Set kernel.perf_event_paranoid safely, persisted and reversible
version_added: 0.1.0
description:
  - Sets C(kernel.perf_event_paranoid) in the running kernel and in
    C(/etc/sysctl.d/90-cpuinfer-perf-paranoid.conf), which records the level found before the
    first change so that O(state=absent) can put it back.
  - The safe way to let an inference service read hardware counters is to keep the level at
    V(2) or higher and grant that one service C(CAP_PERFMON) (Linux 5.8 and later), for example
    C(AmbientCapabilities=CAP_PERFMON) in its systemd unit.
  - V(-1) opens every perf event, kernel and CPU-wide ones included, to every user. Hardening guides
    (KSPP, DISA STIG) forbid it; the module refuses it unless O(allow_unrestricted=true), and then
    records the opt-in in the drop-in.
  - V(3) and V(4) only mean more than V(2) on kernels carrying the Debian/Android restriction patch;
    RV(honours_level_3) tells whether the running kernel does.
author: cpuinfer.llm maintainers (@cpuinfer)
options:
  level:
    description:
      - The wanted level, V(-1) to V(4). Required when O(state=present).
    type: int
  state:
    description:
      - V(present) sets O(level).
      - V(absent) restores the level recorded before this module first changed it and removes the
        drop-in; nothing happens when there is no drop-in.
    type: str
    choices: [present, absent]
    default: present
  allow_unrestricted:
    description:
      - Must be V(true) to set V(-1). Prefer C(CAP_PERFMON) on the one service that needs counters.
    type: bool
    default: false
extends_documentation_fragment:
  - cpuinfer.llm.kernel
  - cpuinfer.llm.kernel.persistent
"""

EXAMPLES = r"""
- name: Keep unprivileged users away from perf (the service gets CAP_PERFMON instead)
  cpuinfer.llm.perf_paranoid:
    level: 2

- name: "Lab only: open every perf event to every user, on record"
  cpuinfer.llm.perf_paranoid:
    level: -1
    allow_unrestricted: true

- name: Put back the level the host had before the collection touched it
  cpuinfer.llm.perf_paranoid:
    state: absent
"""

RETURN = r"""
previous:
  description: The level before the run.
  returned: always
  type: int
  sample: 3
level:
  description: The level after the run (in check mode, what it would be).
  returned: always
  type: int
  sample: 2
original:
  description: The level recorded before the collection first changed it, when a drop-in exists.
  returned: when known
  type: int
  sample: 3
honours_level_3:
  description:
    - V(true) when the running kernel has the restriction patch (levels 3+ forbid perf_event_open
      to unprivileged users), V(false) when it does not (3+ act as 2), V(null) when its build
      configuration cannot be read.
  returned: always
  type: bool
persistent_file:
  description: The sysctl.d drop-in.
  returned: always
  type: str
  sample: /etc/sysctl.d/90-cpuinfer-perf-paranoid.conf
"""

import re

from ansible_collections.cpuinfer.llm.plugins.module_utils._persist import MANAGED_HEADER, applied_at_boot_warning, read_file
from ansible_collections.cpuinfer.llm.plugins.module_utils._runner import Refused, file_step, knob_step, run_module
from ansible_collections.cpuinfer.llm.plugins.module_utils._sysctl import (
    kernel_config,
    read_int,
    render_dropin,
    sysctl_path,
)

KEY = "kernel.perf_event_paranoid"
DROPIN = "/etc/sysctl.d/90-cpuinfer-perf-paranoid.conf"
RESTRICT_PATCH_OPTION = "CONFIG_SECURITY_PERF_EVENTS_RESTRICT"
LEVELS = range(-1, 5)
_ORIGINAL = re.compile(r"^# original level: (-?[0-9]+)$", re.MULTILINE)
SAFER_PATH = (
    "keep kernel.perf_event_paranoid at 2 or higher and grant CAP_PERFMON to the one service "
    "that reads counters (AmbientCapabilities=CAP_PERFMON in its unit, Linux >= 5.8)"
)

ARGUMENT_SPEC = dict(
    level=dict(type="int"),
    state=dict(type="str", choices=["present", "absent"], default="present"),
    allow_unrestricted=dict(type="bool", default=False),
    persistent=dict(type="bool", default=True),
    root=dict(type="path", default="/"),
)


def recorded_original(dropin_text):
    match = _ORIGINAL.search(dropin_text or "")
    return int(match.group(1)) if match else None


def validate(params):
    level = params["level"]
    if params["state"] == "absent":
        return None if level is None else "level is not used with state=absent"
    if level is None:
        return "level is required with state=present"
    if level not in LEVELS:
        return "level must be between -1 and 4, not %d" % level
    if level == -1 and not params["allow_unrestricted"]:
        return (
            "level -1 opens every perf event, kernel and CPU-wide ones included, to every user; "
            "refused without allow_unrestricted=true. Safer: " + SAFER_PATH
        )
    return None


def plan_present(root, params, current, dropin_before):
    level = params["level"]
    steps = [knob_step(root, sysctl_path(KEY), level, current)] if current != level else []
    original = recorded_original(dropin_before)
    dropin_after = dropin_before
    if params["persistent"]:
        if original is None:
            original = current
        notes = ["original level: %d" % original]
        if level == -1:
            notes.append("level -1 set by explicit opt-in (allow_unrestricted=true)")
        dropin_after = render_dropin(MANAGED_HEADER.format(module="cpuinfer.llm.perf_paranoid"), {KEY: level}, notes)
        if dropin_after != dropin_before:
            steps.append(file_step(root, DROPIN, dropin_after, dropin_before))
    return level, original, dropin_after, steps


def plan_absent(root, current, dropin_before):
    if dropin_before is None:
        return current, None, None, []
    original = recorded_original(dropin_before)
    target = current if original is None else original
    steps = [knob_step(root, sysctl_path(KEY), target, current)] if target != current else []
    return target, original, None, steps + [file_step(root, DROPIN, None, dropin_before)]


def converge(module, journal):
    params, root = module.params, module.params["root"]
    problem = validate(params)
    if problem:
        raise Refused(problem + "; nothing written")
    current = read_int(root, KEY)
    dropin_before = read_file(root, DROPIN)

    if params["state"] == "present":
        level, original, dropin_after, steps = plan_present(root, params, current, dropin_before)
    else:
        level, original, dropin_after, steps = plan_absent(root, current, dropin_before)

    config = kernel_config(root)
    honours_level_3 = None if config is None else RESTRICT_PATCH_OPTION in config
    if level >= 3 and honours_level_3 is False:
        module.warn("this kernel lacks the perf restriction patch: level %d acts as 2" % level)
    if level == -1:
        module.warn("kernel.perf_event_paranoid=-1 exposes all perf events to all users. Safer: " + SAFER_PATH)
    if params["state"] == "present" and params["persistent"]:
        warning = applied_at_boot_warning(root, DROPIN, "systemd-sysctl")
        if warning:
            module.warn(warning)
    journal.apply(steps)

    result = dict(
        changed=bool(steps), previous=current, level=level, honours_level_3=honours_level_3, persistent_file=DROPIN,
        diff=dict(before="%s = %d\n%s" % (KEY, current, dropin_before or ""),
                  after="%s = %d\n%s" % (KEY, level, dropin_after or "")),
    )
    if original is not None:
        result["original"] = original
    return result


def main():
    run_module(ARGUMENT_SPEC, converge)


if __name__ == "__main__":
    main()
