# -*- coding: utf-8 -*-
# Copyright: cpuinfer.llm contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Interrupt affinity in procfs: /proc/irq/N/smp_affinity_list per IRQ and the hex mask
/proc/irq/default_smp_affinity that IRQs allocated later start with.

Private to the collection. Some IRQs cannot be moved (per-CPU timers, kernel-managed queue IRQs of
NVMe and virtio): the kernel answers EIO (or EINVAL); callers report those as unmovable instead of
failing, because no setting can change them.
"""

from __future__ import absolute_import, division, print_function

import errno
import os
import re

from ansible_collections.cpuinfer.llm.plugins.module_utils._decimal import is_decimal
from ansible_collections.cpuinfer.llm.plugins.module_utils import _cpulist
from ansible_collections.cpuinfer.llm.plugins.module_utils._errors import HostError
from ansible_collections.cpuinfer.llm.plugins.module_utils._knobs import KnobError, knob_exists, knob_path, read_knob

__metaclass__ = type

_MASK = re.compile(r"[0-9a-fA-F]+(,[0-9a-fA-F]+)*")
IRQ_DIR = "/proc/irq"
DEFAULT_MASK = IRQ_DIR + "/default_smp_affinity"
UNMOVABLE_ERRNOS = (errno.EIO, errno.EINVAL)
DEBUGFS_IRQS = "/sys/kernel/debug/irq/irqs"
SYSFS_IRQS = "/sys/kernel/irq"
# IRQs the kernel refused to move in a real run, so that check mode can predict them without writing
UNMOVABLE_RECORD = "/var/lib/cpuinfer/irq-unmovable"


def irqs(root):
    """IRQ numbers that have an affinity file, ascending."""
    base = knob_path(root, IRQ_DIR)
    if not os.path.isdir(base):
        return []
    return sorted(int(n) for n in os.listdir(base) if is_decimal(n) and knob_exists(root, affinity_relative(int(n))))


def affinity_relative(irq):
    return "%s/%d/smp_affinity_list" % (IRQ_DIR, irq)


def read_affinity(root, irq):
    return _cpulist.parse_cpulist(read_knob(root, affinity_relative(irq)))


def parse_mask(text, path=DEFAULT_MASK):
    """'00000000,0000000f' (32-bit hex words, most significant first) -> {0, 1, 2, 3}; KnobError naming
    path for anything else."""
    if text.strip() and not _MASK.fullmatch(text.strip()):
        raise KnobError("%s holds %r, not a hex CPU mask such as 00000000,0000000f" % (path, text))
    value = int(text.replace(",", "").strip() or "0", 16)
    return set(bit for bit in range(value.bit_length()) if value >> bit & 1)


def format_mask(cpus, width_cpus):
    """{0, 1} with 64 CPUs -> '00000000,00000003': the kernel's own form, one word per 32 CPUs."""
    value = sum(1 << cpu for cpu in cpus)
    words = max(1, (max(width_cpus, 1) + 31) // 32)
    return ",".join("%08x" % (value >> (32 * i) & 0xFFFFFFFF) for i in reversed(range(words)))


def read_default(root):
    return parse_mask(read_knob(root, DEFAULT_MASK)) if knob_exists(root, DEFAULT_MASK) else None


def is_unmovable(knob_error):
    return getattr(knob_error, "errno", None) in UNMOVABLE_ERRNOS


def identity(root, irq):
    """What an IRQ serves (its handlers, /sys/kernel/irq/N/actions): a record of an earlier refusal
    applies only while the same IRQ number still serves the same handlers."""
    relative = "%s/%d/actions" % (SYSFS_IRQS, irq)
    return read_knob(root, relative) if knob_exists(root, relative) else ""


def managed_by_kernel(root, irq):
    """True when debugfs shows IRQD_AFFINITY_MANAGED (NVMe, virtio queue vectors), False when it
    shows the IRQ without it, None when debugfs is not mounted or readable."""
    relative = "%s/%d" % (DEBUGFS_IRQS, irq)
    try:
        return "IRQD_AFFINITY_MANAGED" in read_knob(root, relative)
    except HostError:
        return None


def parse_record(text):
    """'25 virtio0-input.0' lines -> {25: 'virtio0-input.0'}; lines this module did not write are skipped."""
    record = {}
    for line in (text or "").splitlines():
        number, dummy, actions = line.partition(" ")
        if is_decimal(number):
            record[int(number)] = actions
    return record


def render_record(record, header):
    return header + "".join("%d %s\n" % (irq, record[irq]) for irq in sorted(record))
