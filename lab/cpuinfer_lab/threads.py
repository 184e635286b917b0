"""QEMU's threads on this machine: which are the guest's vCPUs, how much CPU each has used, and
pinning them. qemu names its threads when it runs with `-name ...,debug-threads=on`: the vCPUs
"CPU 0/TCG" ("CPU 0/KVM" under KVM), the rest its main loop, RCU, I/O and worker threads.

Pinning only sets the CPU affinity of the lab's own qemu threads; nothing of this machine's kernel
is tuned."""

import os
import re
from pathlib import Path

VCPU = re.compile(r"^CPU (\d+)/(TCG|KVM)$")


def _cpu_seconds(stat_text: str, ticks: int) -> float:
    # the name in (...) may hold spaces: fields count from after its closing parenthesis
    fields = stat_text.rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / ticks  # utime, stime (fields 14 and 15 of stat)


def threads(pid: int, proc: str = "/proc") -> list[dict]:
    """[{tid, name, cpu_seconds}] of a process's threads; threads that end meanwhile are left out."""
    ticks = os.sysconf("SC_CLK_TCK")
    found = []
    tasks = Path(proc) / str(pid) / "task"
    for entry in sorted(tasks.iterdir(), key=lambda p: int(p.name)):
        try:
            name = (entry / "comm").read_text(encoding="utf-8").rstrip("\n")
            seconds = _cpu_seconds((entry / "stat").read_text(encoding="utf-8"), ticks)
        except (OSError, IndexError, ValueError):
            continue
        found.append({"tid": int(entry.name), "name": name, "cpu_seconds": seconds})
    return found


def rotated(host_cpus: list[int], offset: int) -> list[int]:
    """host_cpus starting at position offset (mod its length): the VM started offset-th gets its own first CPU."""
    start = offset % len(host_cpus)
    return host_cpus[start:] + host_cpus[:start]


def pinning_plan(found: list[dict], host_cpus: list[int], housekeeping: list[int]) -> dict[int, dict]:
    """tid -> {name, cpus}: vCPU n on host CPU host_cpus[n mod len], every other qemu thread on the
    housekeeping CPUs (the host CPUs that mirror the guest's housekeeping CPU)."""
    plan = {}
    for thread in found:
        match = VCPU.match(thread["name"])
        cpus = [host_cpus[int(match.group(1)) % len(host_cpus)]] if match else list(housekeeping)
        plan[thread["tid"]] = {"name": thread["name"], "cpus": cpus}
    if not any(VCPU.match(entry["name"]) for entry in plan.values()):
        raise ValueError("no vCPU threads named 'CPU n/TCG': was qemu started with -name ...,debug-threads=on?")
    return plan


def apply(plan: dict[int, dict], setaffinity=os.sched_setaffinity) -> dict[str, list[int]]:
    """Set each thread's affinity; returns name -> CPUs of the threads that were pinned."""
    applied = {}
    for tid, entry in plan.items():
        try:
            setaffinity(tid, entry["cpus"])
        except ProcessLookupError:
            continue  # a worker thread that ended since it was listed
        applied[entry["name"]] = sorted(set(applied.get(entry["name"], [])) | set(entry["cpus"]))
    return applied


def cpu_used(before: list[dict], after: list[dict]) -> dict[str, float]:
    """CPU seconds per thread name between two readings (threads of one name summed)."""
    start = {t["tid"]: t["cpu_seconds"] for t in before}
    used: dict[str, float] = {}
    for thread in after:
        delta = thread["cpu_seconds"] - start.get(thread["tid"], 0.0)
        used[thread["name"]] = round(used.get(thread["name"], 0.0) + delta, 2)
    return used
