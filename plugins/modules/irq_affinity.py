#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright: cpuinfer.llm contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import absolute_import, division, print_function

__metaclass__ = type

DOCUMENTATION = r"""
module: irq_affinity
short_description: Keep interrupts on the housekeeping CPUs
version_added: 1.0.0
description:
  - Sets C(/proc/irq/N/smp_affinity_list) of every IRQ to O(cpus), and with O(default=true) also
    C(/proc/irq/default_smp_affinity), which IRQs allocated later start with. Interrupt handling then
    stays off the CPUs that run inference.
  - Some IRQs cannot be moved (per-CPU timers, kernel-managed queue IRQs of NVMe or virtio), the kernel
    refuses with EIO or EINVAL. They are reported in RV(unmovable) and are not an error. A real run
    records them in C(/var/lib/cpuinfer/irq-unmovable) with the handlers they serve.
  - Check mode writes nothing anywhere. It predicts an IRQ unmovable when debugfs
    (C(/sys/kernel/debug/irq/irqs/N)) shows it kernel-managed, or when a real run recorded a refusal of
    the same IRQ serving the same handlers; IRQs it cannot tell about are counted as movable and listed
    in RV(unpredicted), with a warning.
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
  description: IRQs the kernel does not let anyone move, with its answer (in check mode, why they are predicted so).
  returned: always
  type: list
  elements: dict
  sample: [{"irq": 25, "reason": "Input/output error"}]
unpredicted:
  description: In check mode, IRQs counted as movable without proof (no debugfs, no earlier refusal recorded).
  returned: always
  type: list
  elements: int
  sample: [27]
"""

import os

from ansible_collections.cpuinfer.llm.plugins.module_utils import _cpulist, _irq, _knobs, _topology
from ansible_collections.cpuinfer.llm.plugins.module_utils._persist import MANAGED_HEADER, read_file
from ansible_collections.cpuinfer.llm.plugins.module_utils._runner import (
    Refused,
    StepFailed,
    file_step,
    knob_step,
    render_values,
    run_module,
)

ARGUMENT_SPEC = dict(
    cpus=dict(type="str", required=True),
    default=dict(type="bool", default=True),
    match=dict(type="str", choices=["exact", "within"], default="exact"),
    root=dict(type="path", default="/"),
)
RECORDED = "refused before (%s)" % _irq.UNMOVABLE_RECORD


def read_state(root):
    state = dict((str(irq), _cpulist.format_cpulist(_irq.read_affinity(root, irq))) for irq in _irq.irqs(root))
    default = _irq.read_default(root)
    if default is not None:
        state["default"] = _cpulist.format_cpulist(default)
    return state


def wanted_cpus(root, text):
    online = _topology.online_cpus(root)
    wanted = _cpulist.parse_cpulist(text)
    if not wanted:
        raise Refused("cpus is empty: every IRQ needs at least one CPU; nothing written")
    if not wanted <= online:
        raise Refused("cpus %s are not online (online: %s); nothing written" % (
            _cpulist.format_cpulist(wanted - online), _cpulist.format_cpulist(online)))
    return wanted


def predicted_unmovable(root, irq, record):
    """Why check mode may take an IRQ as unmovable without writing, or None when it cannot tell."""
    managed = _irq.managed_by_kernel(root, irq)
    if managed:
        return "kernel-managed (debugfs IRQD_AFFINITY_MANAGED)"
    if managed is None and irq in record and record[irq] == _irq.identity(root, irq):
        return RECORDED
    return None


def move(module, journal, root, key, wanted_text, before, record):
    """(moved, unmovable reason or None, predicted) for one IRQ that is not in place."""
    irq = int(key)
    if module.check_mode:
        reason = predicted_unmovable(root, irq, record)
        return reason is None, reason, reason is not None or _irq.managed_by_kernel(root, irq) is False
    try:
        journal.run(knob_step(root, _irq.affinity_relative(irq), wanted_text, before[key]))
    except StepFailed as exc:
        if _irq.is_unmovable(exc.cause):
            return False, os.strerror(exc.cause.errno), True
        raise
    return True, None, True


def converge(module, journal):
    root = module.params["root"]
    wanted = wanted_cpus(root, module.params["cpus"])
    before = read_state(root)
    wanted_text = _cpulist.format_cpulist(wanted)
    within = module.params["match"] == "within"
    record_before = read_file(root, _irq.UNMOVABLE_RECORD)
    record = _irq.parse_record(record_before)

    after, moved, unmovable, unpredicted, refused = dict(before), [], [], [], {}
    for key in sorted((k for k in before if k != "default"), key=int):
        in_place = (_cpulist.parse_cpulist(before[key]) <= wanted) if within else before[key] == wanted_text
        if in_place:
            continue
        did_move, reason, predicted = move(module, journal, root, key, wanted_text, before, record)
        if reason:
            unmovable.append(dict(irq=int(key), reason=reason))
            if reason != RECORDED:
                refused[int(key)] = _irq.identity(root, int(key))
        if not predicted:
            unpredicted.append(int(key))
        if did_move:
            moved.append(int(key))
            after[key] = wanted_text
    if module.params["default"] and "default" in before and before["default"] != wanted_text:
        mask_before = _knobs.read_knob(root, _irq.DEFAULT_MASK)
        width = len(mask_before.replace(",", "")) * 4
        journal.apply([knob_step(root, _irq.DEFAULT_MASK, _irq.format_mask(wanted, width), mask_before)])
        after["default"] = wanted_text
    record_changed = False
    if refused:  # only a real run learns of refusals
        kept = dict((irq, actions) for irq, actions in record.items() if str(irq) in before)
        kept.update(refused)
        record_after = _irq.render_record(kept, MANAGED_HEADER.format(module="cpuinfer.llm.irq_affinity"))
        record_changed = record_after != record_before
        if record_changed:
            journal.apply([file_step(root, _irq.UNMOVABLE_RECORD, record_after, record_before)])
    if unpredicted:
        module.warn("check mode could not tell whether IRQs %s can move (no debugfs, no earlier refusal recorded): "
                    "counted as movable" % ", ".join(str(irq) for irq in unpredicted))

    result = dict(changed=after != before or record_changed, before=before, after=after, moved=moved, unmovable=unmovable,
                  unpredicted=unpredicted)
    if module._diff:
        result["diff"] = dict(before_header="/proc/irq", after_header="/proc/irq",
                              before=render_values(before), after=render_values(after))
    return result


def main():
    run_module(ARGUMENT_SPEC, converge)


if __name__ == "__main__":
    main()
