# -*- coding: utf-8 -*-
# Copyright: cpuinfer.llm contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""What the sysctl module does, callable with any params: OPTIONS (its options but root) and
converge(module, journal). The sysctl module and kernel_settings both run it."""

from __future__ import absolute_import, division, print_function

import re

from ansible_collections.cpuinfer.llm.plugins.module_utils import _perf_paranoid_settings, _thp_settings
from ansible_collections.cpuinfer.llm.plugins.module_utils._knobs import knob_exists, read_knob
from ansible_collections.cpuinfer.llm.plugins.module_utils._paths import link_problem, normal_path, path_problem
from ansible_collections.cpuinfer.llm.plugins.module_utils._persist import (
    MANAGED_HEADER, applied_at_boot_warning, read_file, unread_dropin_problem)
from ansible_collections.cpuinfer.llm.plugins.module_utils._runner import Refused, file_step, knob_step, refuse_if, render_values
from ansible_collections.cpuinfer.llm.plugins.module_utils._sysctl import SysctlError, render_dropin, sysctl_path

__metaclass__ = type

OWNED_ELSEWHERE = {"kernel.perf_event_paranoid": "cpuinfer.llm.perf_paranoid"}
# The drop-ins of the other kernel parts: a sysctl drop-in there would overwrite their file (and
# perf_paranoid's record of the level the host had before).
OTHER_DROPINS = {_thp_settings.TMPFILES_DROPIN: "cpuinfer.llm.thp", _perf_paranoid_settings.DROPIN: "cpuinfer.llm.perf_paranoid"}
# What procfs takes: one line of printable ASCII (tabs separate the fields of multi-value keys).
_PROC_TEXT = re.compile(r"[\t\x20-\x7e]+")

OPTIONS = dict(
    values=dict(type="dict", required=True),
    dropin=dict(type="path", default="/etc/sysctl.d/90-cpuinfer-tuning.conf"),
    missing=dict(type="str", choices=["skip", "fail"], default="skip"),
    persistent=dict(type="bool", default=True),
)


def dropin(params):
    """The drop-in this part writes (kernel_settings keeps other parts and files off it); None when the
    part is not given: its drop-in is the request's."""
    return (normal_path(params["dropin"]) or params["dropin"]) if params else None


def normalised(value):
    """The kernel separates the fields of a multi-value sysctl with tabs; compare words."""
    return " ".join(str(value).split())


def wanted_values(values, problems):
    """{key: text}, each bad key and value named in problems."""
    wanted = {}
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
        elif not _PROC_TEXT.fullmatch(str(value)):
            problems.append("%s: %r has characters procfs does not take (printable ASCII only)" % (key, value))
        else:
            wanted[key] = normalised(value)
    return wanted


def dropin_problems(params, root):
    """What is wrong with the drop-in's path: not one absolute file path, another part's drop-in, a file
    systemd-sysctl never reads, or through a link."""
    path, problem = path_problem("dropin", params["dropin"])
    if problem:
        return [problem]
    if path in OTHER_DROPINS:
        return ["dropin %s is %s's drop-in; give a file of its own" % (path, OTHER_DROPINS[path])]
    problems = [unread_dropin_problem("dropin", params["dropin"], path, "systemd-sysctl"), link_problem("dropin", root, path)]
    return [problem for problem in problems if problem]


def converge(module, journal):
    params, root = module.params, module.params["root"]
    problems = []
    wanted = wanted_values(params["values"], problems)
    refuse_if(problems + dropin_problems(params, root))
    params = dict(params, dropin=normal_path(params["dropin"]))
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
