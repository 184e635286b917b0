# -*- coding: utf-8 -*-
# Copyright: cpuinfer.llm contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""What the thp module does, callable with any params: OPTIONS (its options but root) and
converge(module, journal). The thp module and kernel_settings (THP, perf and sysctls in one run) both run it."""

from __future__ import absolute_import, division, print_function

import os

from ansible_collections.cpuinfer.llm.plugins.module_utils._persist import MANAGED_HEADER, applied_at_boot_warning, read_file
from ansible_collections.cpuinfer.llm.plugins.module_utils._runner import Refused, file_step, knob_step, refuse_if, render_values
from ansible_collections.cpuinfer.llm.plugins.module_utils._thp import (
    KHUGEPAGED_KNOBS,
    TMPFILES_DROPIN,
    knob_relative,
    parse_dropin,
    read_state,
    render_dropin,
    small_pages_per_huge_page,
    validate,
)

__metaclass__ = type

OPTIONS = dict(
    enabled=dict(type="str", choices=["always", "madvise", "never"]),
    defrag=dict(type="str", choices=["always", "defer", "defer+madvise", "madvise", "never"]),
    khugepaged=dict(type="dict", options=dict((name, dict(type="int")) for name in KHUGEPAGED_KNOBS)),
    persistent=dict(type="bool", default=True),
)


def dropin(dummy_params):
    """The drop-in this part writes (kernel_settings keeps other parts and files off it)."""
    return TMPFILES_DROPIN


def wanted_values(params):
    wanted = dict((name, params[name]) for name in ("enabled", "defrag") if params[name] is not None)
    for name, value in (params["khugepaged"] or {}).items():
        if value is not None:
            wanted["khugepaged." + name] = value
    return wanted


def converge(module, journal):
    params, root = module.params, module.params["root"]
    current, choices = read_state(root)
    wanted = wanted_values(params)
    if not wanted:
        raise Refused("nothing to set: give enabled, defrag or khugepaged")
    refuse_if(validate(wanted, current, choices, small_pages_per_huge_page(root, os.sysconf("SC_PAGE_SIZE"))))

    after = dict(current, **wanted)
    steps = [knob_step(root, knob_relative(k), wanted[k], current[k]) for k in sorted(wanted) if current[k] != wanted[k]]
    dropin_before = dropin_after = read_file(root, TMPFILES_DROPIN)
    if params["persistent"]:
        recorded = dict(parse_dropin(dropin_before), **wanted)
        dropin_after = render_dropin(recorded, MANAGED_HEADER.format(module="cpuinfer.llm.thp"))
        if dropin_after != dropin_before:
            steps.append(file_step(root, TMPFILES_DROPIN, dropin_after, dropin_before))
        warning = applied_at_boot_warning(root, TMPFILES_DROPIN, "systemd-tmpfiles")
        if warning:
            module.warn(warning)
    journal.apply(steps)

    result = dict(changed=bool(steps), before=current, after=after)
    if params["persistent"]:
        result["persistent_file"] = TMPFILES_DROPIN
    if module._diff:
        result["diff"] = [
            dict(before_header="runtime", after_header="runtime",
                 before=render_values(current), after=render_values(after)),
            dict(before_header=TMPFILES_DROPIN, after_header=TMPFILES_DROPIN,
                 before=dropin_before or "", after=dropin_after or ""),
        ]
    return result
