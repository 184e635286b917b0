"""cpuinfer-hold-latency MICROSECONDS: hold the CPUs' idle-state exit latency at or below MICROSECONDS for
as long as this process runs, as tuned's force_latency does: a PM QoS request through /dev/cpu_dma_latency,
which the kernel keeps while the file stays open and drops when the process ends (a crash included).
Where the host has no cpuidle driver (VMs under emulation) there is no C-state to bound: that is said,
and the request is held all the same (harmless, and right again on hardware).
"""

import signal
import struct
import sys

from ansible_collections.cpuinfer.llm.plugins.module_utils._decimal import is_decimal
from ansible_collections.cpuinfer.llm.plugins.module_utils._topology import cpuidle_driver

DEVICE = "/dev/cpu_dma_latency"


def request(microseconds):
    """The PM QoS request as the kernel reads it: a native 32-bit integer of microseconds."""
    return struct.pack("=i", microseconds)


def hold(microseconds, device=DEVICE, wait=signal.pause):
    with open(device, "wb", buffering=0) as handle:
        handle.write(request(microseconds))
        wait()


def _stop(signum, frame):
    raise SystemExit(0)


def main(argv=None, root="/", device=DEVICE, wait=signal.pause):
    args = sys.argv[1:] if argv is None else argv
    if len(args) != 1 or not is_decimal(args[0]) or int(args[0]) > 2000000:
        sys.stderr.write("usage: cpuinfer-hold-latency MICROSECONDS (0 to 2000000)\n")
        return 2
    microseconds = int(args[0])
    driver = cpuidle_driver(root)
    sys.stderr.write("holding idle-state exit latency <= %d us (%s)\n" % (
        microseconds, "cpuidle driver %s" % driver if driver else "no cpuidle driver here: nothing to bound"))
    signal.signal(signal.SIGTERM, _stop)
    try:
        hold(microseconds, device, wait)
    except OSError as exc:
        sys.stderr.write("%s: %s\n" % (device, exc.strerror or exc))
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
