"""Keeps interrupts off the inference CPUs (cpuinfer-irq-affinity.service).

The irq_affinity module places every IRQ at converge. After that, drivers keep setting affinities of
their own: at boot, and whenever a device is (re)opened, virtio-net and many NICs give their queue
IRQs every CPU, overriding the default mask. So this runs for the life of the host: the default mask
once, then every IRQ that may run outside CPULIST is confined to it, at start and every SECONDS after.
An IRQ already within CPULIST is left alone (irqbalance may spread IRQs over those CPUs). IRQs the
kernel does not let anyone move (EIO/EINVAL) are skipped, as the module does.

The CPU list, the mask and the procfs access are the collection's own helpers (_cpulist, _irq), the
same code the module runs at converge.
Usage: cpuinfer-irq-keeper CPULIST [--every SECONDS]
"""

import argparse
import sys
import time

from ansible_collections.cpuinfer.llm.plugins.module_utils import _cpulist, _irq
from ansible_collections.cpuinfer.llm.plugins.module_utils._knobs import KnobError, knob_exists, write_knob


def set_default(root, cpus):
    write_knob(root, _irq.DEFAULT_MASK, _irq.format_mask(cpus, max(cpus) + 1))


def confine(root, cpus, cpulist):
    """One pass: every movable IRQ that may run outside cpus is set to cpulist. -> (moved, unmovable)"""
    moved, unmovable = [], []
    for irq in _irq.irqs(root):
        relative = _irq.affinity_relative(irq)
        try:
            if _irq.read_affinity(root, irq) <= cpus:
                continue
            write_knob(root, relative, cpulist)
        except KnobError as exc:
            if not knob_exists(root, relative):
                continue  # the IRQ was freed between listing and reading
            if not _irq.is_unmovable(exc):
                raise
            unmovable.append(irq)
            continue
        moved.append(irq)
    return moved, unmovable


def main(argv=None, root="/"):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("cpulist")
    parser.add_argument("--every", type=float, default=0, help="seconds between passes; 0: one pass")
    args = parser.parse_args(argv)
    cpus = _cpulist.parse_cpulist(args.cpulist)
    # the default first: an IRQ allocated from here on starts on the right CPUs, unless its driver
    # sets its own affinity, which the passes below catch
    set_default(root, cpus)
    known_unmovable = None
    while True:
        moved, unmovable = confine(root, cpus, args.cpulist)
        if moved or unmovable != known_unmovable:
            # only what changed reaches the journal, not a line per pass
            sys.stderr.write("IRQs on CPUs %s: moved %s; cannot be moved: %s\n" % (
                args.cpulist, moved or "none", unmovable or "none"))
            sys.stderr.flush()
            known_unmovable = unmovable
        if not args.every:
            return 0
        time.sleep(args.every)


if __name__ == "__main__":
    sys.exit(main())
