"""The conditions a benchmark measures under: is this machine quiet enough, how the lab VM's qemu
threads are pinned, and how much host CPU each of them used while the measurement ran.

A result that does not say these cannot be checked against a rerun on another machine (issue 19)."""

import argparse
import json
import os
import subprocess
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "lab"))
from cpuinfer_lab import threads  # noqa: E402  (the lab's own reading of qemu's threads)

REPO = Path(__file__).resolve().parents[1]


def add_options(parser, repeats):
    """The options every benchmark shares: how often to repeat the whole measurement, pinning, --force."""
    parser.add_argument("--repeats", type=int, default=repeats,
                        help="repeat the whole measurement; the report gives each ratio's median and spread")
    parser.add_argument("--pin", action=argparse.BooleanOptionalAction, default=True,
                        help="pin the VM's vCPU n to host CPU n and qemu's other threads to host CPU 0, the one "
                             "that mirrors the guest's housekeeping CPU (scripts/lab up --pin; on by default)")
    parser.add_argument("--force", action="store_true", help="measure even when the machine is busy (recorded)")


def busy_machine(own_vms, proc="/proc"):
    """What makes this machine unfit to measure on: a load average above half its CPUs, or a qemu
    that is not one of this benchmark's own VMs (another scenario, another benchmark)."""
    problems = []
    load = os.getloadavg()[0]
    if load > 0.5 * (os.cpu_count() or 1):
        problems.append("load average %.2f on %d CPUs" % (load, os.cpu_count() or 1))
    for entry in Path(proc).iterdir():
        if not entry.name.isdigit():
            continue
        try:
            argv = (entry / "cmdline").read_bytes().split(b"\0")
        except OSError:
            continue
        if argv and os.path.basename(argv[0]).startswith(b"qemu-system-"):
            name = next((a.decode(errors="replace") for a in argv if a.startswith(b"cpuinfer-lab:")), "?")
            if name.split(",")[0].split(":", 1)[-1] not in own_vms:
                problems.append("another qemu runs: pid %s (%s)" % (entry.name, name))
    return problems


def check_machine(own_vms, force, log):
    """Refuses a busy machine (SystemExit naming why) unless force; returns the problems seen."""
    problems = busy_machine(own_vms)
    if problems and not force:
        raise SystemExit("bench: this machine is busy, a measurement now would not hold: %s (--force measures anyway)"
                         % "; ".join(problems))
    for problem in problems:
        log("warning: %s" % problem)
    return problems


def qemu_threads(vm_names):
    """Per VM, its qemu threads' CPU seconds so far and its pinning (scripts/lab threads)."""
    found = {}
    for name in vm_names:
        out = subprocess.run([str(REPO / "scripts" / "lab"), "threads", name], stdout=subprocess.PIPE, text=True,
                             check=True, cwd=REPO).stdout
        found[name] = json.loads(out)
    return found


def thread_cpu_during(before, after):
    """VM -> {pinning, cpu_seconds per thread name} between two qemu_threads readings."""
    return {name: {"pinning": reading["pinning"], "cpu_seconds": threads.cpu_used(before[name]["threads"], reading["threads"])}
            for name, reading in after.items()}


def conditions_markdown(conditions):
    """The machine check and, per VM and repeat, its qemu threads' CPU seconds and their pinning."""
    if not conditions:
        return []
    lines = ["", "Machine before the run: %s." % ("; ".join(conditions["machine_check"]) or "quiet (no other qemu, low load)")]
    # reports written before repeats hold one reading under "qemu_threads"
    readings = conditions["qemu_threads_per_repeat"] if "qemu_threads_per_repeat" in conditions else [conditions["qemu_threads"]]
    for index, reading in enumerate(readings):
        for vm_name, usage in reading.items():
            pinned = ", ".join("%s on %s" % (k, v) for k, v in sorted(usage["pinning"].items())) or "not pinned"
            used = ", ".join("%s %.1f s" % (k, v) for k, v in sorted(usage["cpu_seconds"].items(), key=lambda kv: -kv[1]))
            which = " (repeat %d)" % (index + 1) if len(readings) > 1 else ""
            lines.append("%s%s: qemu threads' CPU during the measurement: %s (%s)." % (vm_name, which, used, pinned))
    return lines
