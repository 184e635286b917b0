#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright: cpuinfer.llm contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import absolute_import, division, print_function

__metaclass__ = type

DOCUMENTATION = r"""
module: sysctl
short_description: Set kernel sysctls now and keep them in one sysctl.d drop-in
version_added: 0.4.0
description:
  - Writes each value under C(/proc/sys) and persists the set in one C(sysctl.d) drop-in, which
    systemd-sysctl applies at boot; one module run for the whole set, so a role's sysctls cost one
    round trip, and the key-to-path rule lives in one place (the collection's sysctl helper).
  - Keys this kernel does not have are left out of the drop-in and reported in RV(missing) (a
    kernel without NUMA has no C(kernel.numa_balancing)); with O(missing=fail) they refuse the run.
  - The whole request is checked first (key syntax, one-line values); on a failed write every
    value and file written by the run is put back. C(kernel.perf_event_paranoid) belongs to
    M(cpuinfer.llm.perf_paranoid), which keeps its safety rules; it is refused here.
author: cpuinfer.llm maintainers (@cpuinfer)
options:
  values:
    description: Sysctl keys (dotted) and their values.
    type: dict
    required: true
  dropin:
    description: The drop-in that persists the values.
    type: path
    default: /etc/sysctl.d/90-cpuinfer-tuning.conf
  missing:
    description: What a key this kernel lacks does.
    type: str
    choices: [skip, fail]
    default: skip
extends_documentation_fragment:
  - cpuinfer.llm.kernel
  - cpuinfer.llm.kernel.persistent
"""

EXAMPLES = r"""
- name: Keep RT throttling on, no automatic NUMA balancing
  cpuinfer.llm.sysctl:
    values:
      kernel.sched_rt_runtime_us: 950000
      kernel.numa_balancing: 0

- name: Put values back in the running kernel only (a revert; the drop-in is removed separately)
  cpuinfer.llm.sysctl:
    values:
      kernel.numa_balancing: 1
    persistent: false
"""

RETURN = r"""
before:
  description: The running values of the keys this kernel has, before the run.
  returned: always
  type: dict
  sample: {kernel.numa_balancing: "1"}
after:
  description: The running values after the run (in check mode, what they would be).
  returned: always
  type: dict
  sample: {kernel.numa_balancing: "0"}
missing:
  description: Keys of O(values) this kernel does not have (left out of the drop-in).
  returned: always
  type: list
  elements: str
  sample: [kernel.numa_balancing]
persistent_file:
  description: The drop-in.
  returned: when O(persistent=true)
  type: str
  sample: /etc/sysctl.d/90-cpuinfer-tuning.conf
"""

from ansible_collections.cpuinfer.llm.plugins.module_utils._knobs import knob_exists, read_knob
from ansible_collections.cpuinfer.llm.plugins.module_utils._persist import MANAGED_HEADER, applied_at_boot_warning, read_file
from ansible_collections.cpuinfer.llm.plugins.module_utils._runner import Refused, file_step, knob_step, refuse_if, render_values, run_module
from ansible_collections.cpuinfer.llm.plugins.module_utils._sysctl import SysctlError, render_dropin, sysctl_path

OWNED_ELSEWHERE = {"kernel.perf_event_paranoid": "cpuinfer.llm.perf_paranoid"}

ARGUMENT_SPEC = dict(
    values=dict(type="dict", required=True),
    dropin=dict(type="path", default="/etc/sysctl.d/90-cpuinfer-tuning.conf"),
    missing=dict(type="str", choices=["skip", "fail"], default="skip"),
    persistent=dict(type="bool", default=True),
    root=dict(type="path", default="/"),
)


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


def main():
    run_module(ARGUMENT_SPEC, converge)


if __name__ == "__main__":
    main()
