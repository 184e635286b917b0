# -*- coding: utf-8 -*-
# Copyright: cpuinfer.llm contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""What the perf_paranoid module does, callable with any params: OPTIONS (its options but root) and
converge(module, journal). The perf_paranoid module and kernel_settings both run it."""

from __future__ import absolute_import, division, print_function

import re

from ansible_collections.cpuinfer.llm.plugins.module_utils._persist import MANAGED_HEADER, applied_at_boot_warning, read_file
from ansible_collections.cpuinfer.llm.plugins.module_utils._runner import Refused, file_step, knob_step
from ansible_collections.cpuinfer.llm.plugins.module_utils._sysctl import (
    kernel_config,
    read_int,
    render_dropin,
    sysctl_path,
)

__metaclass__ = type

KEY = "kernel.perf_event_paranoid"
DROPIN = "/etc/sysctl.d/90-cpuinfer-perf-paranoid.conf"
RESTRICT_PATCH_OPTION = "CONFIG_SECURITY_PERF_EVENTS_RESTRICT"
LEVELS = range(-1, 5)
_ORIGINAL = re.compile(r"^# original level: (-?[0-9]+)$", re.MULTILINE)
SAFER_PATH = (
    "keep kernel.perf_event_paranoid at 2 or higher and grant CAP_PERFMON to the one service "
    "that reads counters (AmbientCapabilities=CAP_PERFMON in its unit, Linux >= 5.8)"
)

OPTIONS = dict(
    level=dict(type="int"),
    state=dict(type="str", choices=["present", "absent"], default="present"),
    allow_unrestricted=dict(type="bool", default=False),
    persistent=dict(type="bool", default=True),
)


def dropin(dummy_params):
    """The drop-in this part writes (kernel_settings keeps other parts and files off it)."""
    return DROPIN


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
