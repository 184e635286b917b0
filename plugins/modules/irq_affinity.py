#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright: cpuinfer.llm contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import absolute_import, division, print_function

__metaclass__ = type

DOCUMENTATION = r"""
module: irq_affinity
short_description: Keep interrupts on the housekeeping CPUs
version_added: 0.2.0
description:
  - Sets C(/proc/irq/N/smp_affinity_list) of every IRQ to O(cpus), and with O(default=true) also
    C(/proc/irq/default_smp_affinity), which IRQs allocated later start with. Interrupt handling then
    stays off the CPUs that run inference.
  - Some IRQs cannot be moved (per-CPU timers, kernel-managed queue IRQs of NVMe or virtio), the kernel
    refuses with EIO or EINVAL. They are reported in RV(unmovable) and are not an error. In check mode
    an IRQ that would move is probed by writing its current affinity back (no change) to tell the two
    apart, so check mode and a real run report the same.
  - Any other refusal undoes every affinity this run wrote.
  - Only the running kernel is changed, once. Drivers may give their IRQs other CPUs later (at boot,
    when a device reopens); the host_tuning role keeps them confined with C(cpuinfer-irq-affinity.service)
    and tells irqbalance, where it runs, to keep off the other CPUs.
author: cpuinfer.llm maintainers (@cpuinfer)
options:
  cpus:
    description: CPU list (kernel format, V(0-1,8)) the IRQs may use; every CPU in it must be online.
    type: str
    required: true
  default:
    description: Also set C(/proc/irq/default_smp_affinity) for IRQs that appear later.
    type: bool
    default: true
  match:
    description:
      - V(exact) sets every IRQ to exactly O(cpus).
      - V(within) leaves alone an IRQ already on some of O(cpus) and moves only those that may run
        elsewhere. Use it where irqbalance spreads IRQs over the allowed CPUs, so the two never undo
        each other's work. The default mask is always set exactly.
    type: str
    choices: [exact, within]
    default: exact
extends_documentation_fragment:
  - cpuinfer.llm.kernel
"""

EXAMPLES = r"""
- name: Interrupts on the housekeeping core only
  cpuinfer.llm.irq_affinity:
    cpus: "{{ host_tuning_cpu_plan.housekeeping }}"

- name: Interrupts off the inference CPUs, irqbalance free to spread them over the rest
  cpuinfer.llm.irq_affinity:
    cpus: "{{ host_tuning_cpu_plan.housekeeping }}"
    match: within
"""

RETURN = r"""
before:
  description: Affinity per IRQ before the run, and C(default) (the default mask as a CPU list).
  returned: always
  type: dict
  sample: {"24": "0-3", "25": "0-3", "default": "0-3"}
after:
  description: Affinity per IRQ after the run (in check mode, what it would be).
  returned: always
  type: dict
  sample: {"24": "0", "25": "0-3", "default": "0"}
moved:
  description: IRQs whose affinity was (or would be) changed.
  returned: always
  type: list
  elements: int
  sample: [24]
unmovable:
  description: IRQs the kernel does not let anyone move, with its answer.
  returned: always
  type: list
  elements: dict
  sample: [{"irq": 25, "reason": "Input/output error"}]
"""

import os

from ansible.module_utils.basic import AnsibleModule
from ansible_collections.cpuinfer.llm.plugins.module_utils import _cpulist, _irq, _knobs
from ansible_collections.cpuinfer.llm.plugins.module_utils._apply import render_values

ARGUMENT_SPEC = dict(
    cpus=dict(type="str", required=True),
    default=dict(type="bool", default=True),
    match=dict(type="str", choices=["exact", "within"], default="exact"),
    root=dict(type="path", default="/"),
)


def read_state(root):
    state = dict((str(irq), _cpulist.format_cpulist(_irq.read_affinity(root, irq))) for irq in _irq.irqs(root))
    default = _irq.read_default(root)
    if default is not None:
        state["default"] = _cpulist.format_cpulist(default)
    return state


def fail_undone(module, undo, exc, before):
    failures = undo.rollback()
    module.fail_json(msg="%s; %s" % (exc, "could NOT restore: %s" % failures if failures
                                     else "every affinity written before it was put back"), before=before)


def main():
    module = AnsibleModule(argument_spec=ARGUMENT_SPEC, supports_check_mode=True)
    root = module.params["root"]
    try:
        online = _cpulist.parse_cpulist(_knobs.read_knob(root, "/sys/devices/system/cpu/online"))
        wanted = _cpulist.parse_cpulist(module.params["cpus"])
        before = read_state(root)
    except (_knobs.KnobError, _cpulist.CpuListError) as exc:
        module.fail_json(msg=str(exc))
    if not wanted:
        module.fail_json(msg="cpus is empty: every IRQ needs at least one CPU; nothing written")
    if not wanted <= online:
        module.fail_json(msg="cpus %s are not online (online: %s); nothing written" % (
            _cpulist.format_cpulist(wanted - online), _cpulist.format_cpulist(online)))
    wanted_text = _cpulist.format_cpulist(wanted)
    within = module.params["match"] == "within"

    def in_place(current_text):
        if within:
            return _cpulist.parse_cpulist(current_text) <= wanted
        return current_text == wanted_text

    after, moved, unmovable = dict(before), [], []
    undo = _knobs.UndoLog(root)
    for key in sorted((k for k in before if k != "default"), key=int):
        if in_place(before[key]):
            continue
        relative = _irq.affinity_relative(int(key))
        try:
            if module.check_mode:
                # the current value written back changes nothing, but an unmovable IRQ says so
                _knobs.write_knob(root, relative, before[key])
            else:
                undo.write(relative, wanted_text, before[key])
        except _knobs.KnobError as exc:
            if _irq.is_unmovable(exc):
                unmovable.append(dict(irq=int(key), reason=os.strerror(exc.errno)))
                continue
            fail_undone(module, undo, exc, before)
        moved.append(int(key))
        after[key] = wanted_text
    if module.params["default"] and "default" in before and before["default"] != wanted_text:
        width = len(_knobs.read_knob(root, _irq.DEFAULT_MASK).replace(",", "")) * 4
        try:
            if not module.check_mode:
                _knobs.write_knob(root, _irq.DEFAULT_MASK, _irq.format_mask(wanted, width))
        except _knobs.KnobError as exc:
            fail_undone(module, undo, exc, before)
        after["default"] = wanted_text

    result = dict(changed=after != before, before=before, after=after, moved=moved, unmovable=unmovable)
    if module._diff:
        result["diff"] = dict(before_header="/proc/irq", after_header="/proc/irq",
                              before=render_values(before), after=render_values(after))
    module.exit_json(**result)


if __name__ == "__main__":
    main()
