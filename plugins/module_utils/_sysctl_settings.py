# -*- coding: utf-8 -*-
# Copyright: cpuinfer.llm contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""What the sysctl module does, callable with any params: OPTIONS (its options but root) and
converge(module, journal). The sysctl module and kernel_settings both run it."""

from __future__ import absolute_import, division, print_function

from ansible_collections.cpuinfer.llm.plugins.module_utils._knobs import knob_exists, read_knob
from ansible_collections.cpuinfer.llm.plugins.module_utils._persist import MANAGED_HEADER, applied_at_boot_warning, read_file
from ansible_collections.cpuinfer.llm.plugins.module_utils._runner import Refused, file_step, knob_step, refuse_if, render_values
from ansible_collections.cpuinfer.llm.plugins.module_utils._sysctl import SysctlError, render_dropin, sysctl_path

__metaclass__ = type

OWNED_ELSEWHERE = {"kernel.perf_event_paranoid": "cpuinfer.llm.perf_paranoid"}

OPTIONS = dict(
    values=dict(type="dict", required=True),
    dropin=dict(type="path", default="/etc/sysctl.d/90-cpuinfer-tuning.conf"),
    missing=dict(type="str", choices=["skip", "fail"], default="skip"),
    persistent=dict(type="bool", default=True),
)


def dropin(params):
    """The drop-in this part writes (kernel_settings keeps other parts and files off it); None when the
    part is not given: its drop-in is the request's."""
    return params["dropin"].rstrip("/") if params else None


def normalised(value):
    """The kernel separates the fields of a multi-value sysctl with tabs; compare words."""
    return " ".join(str(value).split())


def wanted_values(values):
    """{key: text} or Refused naming every bad key and value."""
    problems, wanted = [], {}
    for key in sorted(values):
        value = values[key]
        try:
            sysctl_path(key)
        except SysctlError as exc:
            problems.append(str(exc))
            continue
        if key in OWNED_ELSEWHERE:
            problems.append("%s is set by %s (it keeps its safety rules)" % (key, OWNED_ELSEWHERE[key]))
        elif isinstance(value, (dict, list)) or value is None or isinstance(value, bool):
            problems.append("%s: give a number or a line of text, not %r" % (key, value))
        elif not normalised(value) or "\n" in str(value):
            problems.append("%s: %r is not a one-line value" % (key, value))
        else:
            wanted[key] = normalised(value)
    refuse_if(problems)
    return wanted


def converge(module, journal):
    params, root = module.params, module.params["root"]
    wanted = wanted_values(params["values"])
    missing = sorted(key for key in wanted if not knob_exists(root, sysctl_path(key)))
    if missing and params["missing"] == "fail":
        raise Refused("this kernel has no %s; nothing written" % ", ".join(missing))
    present = dict((key, value) for key, value in wanted.items() if key not in missing)
    before = dict((key, normalised(read_knob(root, sysctl_path(key)))) for key in present)

    steps = [knob_step(root, sysctl_path(key), value, before[key]) for key, value in sorted(present.items())
             if before[key] != value]
    dropin_before = dropin_after = read_file(root, params["dropin"])
    if params["persistent"]:
        notes = ["not in this kernel, left out: %s" % ", ".join(missing)] if missing else []
        dropin_after = render_dropin(MANAGED_HEADER.format(module="cpuinfer.llm.sysctl"), present, notes)
        if dropin_after != dropin_before:
            steps.append(file_step(root, params["dropin"], dropin_after, dropin_before))
        warning = applied_at_boot_warning(root, params["dropin"], "systemd-sysctl")
        if warning:
            module.warn(warning)
    journal.apply(steps)

    after = dict(before, **present)
    result = dict(changed=bool(steps), before=before, after=after, missing=missing)
    if params["persistent"]:
        result["persistent_file"] = params["dropin"]
    if module._diff:
        result["diff"] = [
            dict(before_header="runtime", after_header="runtime", before=render_values(before), after=render_values(after))]
        if params["persistent"]:
            result["diff"].append(dict(before_header=params["dropin"], after_header=params["dropin"],
                                       before=dropin_before or "", after=dropin_after))
    return result
