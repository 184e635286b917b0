"""At boot: every IRQ and the default mask onto the housekeeping CPUs (cpuinfer-irq-affinity.service).

The live setting is made by the irq_affinity module at converge; this re-applies it after a reboot,
when drivers have allocated their IRQs again. IRQs the kernel does not let anyone move (EIO/EINVAL)
are skipped, as the module does. Usage: irq_affinity_boot.py CPULIST
"""

import errno
import glob
import sys


def cpus_of(cpulist):
    cpus = set()
    for part in cpulist.split(","):
        low, dummy_dash, high = part.partition("-")
        cpus.update(range(int(low), int(high or low) + 1))
    return cpus


def mask_of(cpus):
    """The kernel's bitmap format: 32-bit hex words, most significant first, comma-separated."""
    value = sum(1 << cpu for cpu in cpus)
    words = max(cpus) // 32 + 1
    return ",".join("%08x" % (value >> (32 * i) & 0xFFFFFFFF) for i in reversed(range(words)))


def main():
    cpulist = sys.argv[1]
    # the default first: an IRQ allocated from here on starts on the right CPUs, one allocated
    # before is in the list below
    with open("/proc/irq/default_smp_affinity", "w", encoding="ascii") as handle:
        handle.write(mask_of(cpus_of(cpulist)))
    unmovable = 0
    for path in sorted(glob.glob("/proc/irq/*/smp_affinity_list")):
        try:
            with open(path, "w", encoding="ascii") as handle:
                handle.write(cpulist)
        except OSError as exc:
            if exc.errno not in (errno.EIO, errno.EINVAL):
                raise
            unmovable += 1
    sys.stderr.write("IRQs on CPUs %s (%d could not be moved)\n" % (cpulist, unmovable))


if __name__ == "__main__":
    main()
