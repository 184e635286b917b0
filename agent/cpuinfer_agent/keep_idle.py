"""cpuinfer-keep-idle SLICE: give a slice cpu.idle (SCHED_IDLE against its siblings, kernel 5.15+).

systemd before 252 has no setting for cpu.idle (from 252 on, host_tuning writes CPUWeight=idle and
systemd keeps it), and a slice's cgroup is made anew each time the slice starts, so host_tuning runs
this from a oneshot unit the slice wants. Where the kernel has no cpu.idle the slice's CPUWeight=1 is
what stands; that is said, and it is no failure.
"""

import sys

from ansible_collections.cpuinfer.llm.plugins.module_utils import _cgroupfs
from ansible_collections.cpuinfer.llm.plugins.module_utils._errors import HostError


def keep(root, slice_name):
    """'idle' when the slice now runs with cpu.idle, 'unsupported' when the kernel has none, 'no group'."""
    group = _cgroupfs.unit_group(root, slice_name)
    if not group:
        return "no group"
    return "idle" if _cgroupfs.keep_idle(root, group) else "unsupported"


def main(argv=None, root="/"):
    args = sys.argv[1:] if argv is None else argv
    if len(args) != 1:
        sys.stderr.write("usage: cpuinfer-keep-idle SLICE\n")
        return 2
    try:
        outcome = keep(root, args[0])
    except (HostError, OSError) as exc:
        sys.stderr.write("cpu.idle on %s: %s\n" % (args[0], exc))
        return 1
    messages = {"idle": "%s runs with cpu.idle", "unsupported": "this kernel has no cpu.idle: %s keeps CPUWeight=1",
                "no group": "%s has no cgroup now (not started): nothing to do"}
    sys.stderr.write(messages[outcome] % args[0] + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
