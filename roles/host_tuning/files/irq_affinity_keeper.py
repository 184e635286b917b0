"""Keeps interrupts off the inference CPUs (cpuinfer-irq-affinity.service).

The irq_affinity module places every IRQ at converge. After that, drivers keep setting affinities of
their own: at boot, and whenever a device is (re)opened, virtio-net and many NICs give their queue
IRQs every CPU, overriding the default mask. So this runs for the life of the host: the default mask
once, then every IRQ that may run outside CPULIST is confined to it, at start and every SECONDS after.
An IRQ already within CPULIST is left alone (irqbalance may spread IRQs over those CPUs). IRQs the
kernel does not let anyone move (EIO/EINVAL) are skipped, as the module does.

It runs with the host's python3, without the collection installed, hence its own small CPU-list and
mask code (a unit test pins both to the collection's helpers).
Usage: irq_affinity_keeper.py CPULIST [--every SECONDS]
"""

import argparse
import errno
import os
import sys
import time

UNMOVABLE = (errno.EIO, errno.EINVAL)


def cpus_of(cpulist):
    cpus = set()
    for part in cpulist.strip().split(","):
        if part:
            low, dummy_dash, high = part.partition("-")
            cpus.update(range(int(low), int(high or low) + 1))
    return cpus


def mask_of(cpus):
    """The kernel's bitmap format: 32-bit hex words, most significant first, comma-separated."""
    value = sum(1 << cpu for cpu in cpus)
    words = max(cpus) // 32 + 1
    return ",".join("%08x" % (value >> (32 * i) & 0xFFFFFFFF) for i in reversed(range(words)))


def set_default(root, cpus):
    with open(os.path.join(root, "proc/irq/default_smp_affinity"), "w", encoding="ascii") as handle:
        handle.write(mask_of(cpus))


def confine(root, cpus, cpulist):
    """One pass: every movable IRQ that may run outside cpus is set to cpulist. -> (moved, unmovable)"""
    moved, unmovable = [], []
    base = os.path.join(root, "proc/irq")
    for name in sorted((n for n in os.listdir(base) if n.isdigit()), key=int):
        path = os.path.join(base, name, "smp_affinity_list")
        try:
            with open(path, encoding="ascii") as handle:
                if cpus_of(handle.read()) <= cpus:
                    continue
            with open(path, "w", encoding="ascii") as handle:
                handle.write(cpulist)
        except FileNotFoundError:
            continue  # the IRQ was freed between listing and reading
        except OSError as exc:
            if exc.errno not in UNMOVABLE:
                raise
            unmovable.append(int(name))
            continue
        moved.append(int(name))
    return moved, unmovable


def main(argv=None, root="/"):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("cpulist")
    parser.add_argument("--every", type=float, default=0, help="seconds between passes; 0: one pass")
    args = parser.parse_args(argv)
    cpus = cpus_of(args.cpulist)
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
