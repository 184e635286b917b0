"""Whether this machine's CPUs slow each other down, below any VM.

Issue 19: with the lab VM pinned (the inference vCPU alone on host CPU 1, the neighbour's vCPU and
every other qemu thread on host CPU 0), the tuned service still lost about a fifth of its rate when
the neighbour ran. qemu's own threads used a few seconds of CPU 0 in minutes, so they do not explain
it. This measures the machine itself: the same integer loop pinned to one host CPU, alone and while
another loop runs pinned to the other host CPU (an integer loop, then a memory-copy loop),
interleaved round after round, with each CPU's steal time (what the hypervisor under this machine
took). If the measured loop slows down when the other CPU is busy, two "CPUs" of this machine share
a physical core, its caches or its power budget, and no pinning above them can isolate a neighbour.
"""

import statistics
import subprocess
import sys
import time
from pathlib import Path

import machine
import stats
from common import add_force, environment, log, run_line, write_report

# One loop per process, pinned before it starts; prints its work per second. Integer work is what a
# TCG vCPU mostly does (translated guest code); the memory loop copies 32 MiB buffers, past the L2.
WORKER = r"""
import os, sys, time
cpu, kind, seconds = int(sys.argv[1]), sys.argv[2], float(sys.argv[3])
os.sched_setaffinity(0, {cpu})
if kind == "memory":
    source = bytearray(32 * 1024 * 1024)
    target = bytearray(len(source))
done, end = 0, time.monotonic() + seconds  # after the buffers exist: their allocation is not measured
if kind == "integer":
    while time.monotonic() < end:
        x = 0
        for i in range(20000):
            x ^= i * 7
        done += 20000
else:
    while time.monotonic() < end:
        target[:] = source
        done += len(source)
print(done / seconds, flush=True)
"""

VARIANTS = ("alone", "integer_neighbour", "memory_neighbour")
USER_HZ = 100  # /proc/stat counts in clock ticks; USER_HZ is 100 on Linux for every architecture


def steal_seconds(cpu, proc="/proc"):
    """CPU `cpu`'s steal time so far, from /proc/stat's `cpuN` line (its eighth counter)."""
    for line in Path(proc, "stat").read_text(encoding="ascii").splitlines():
        fields = line.split()
        if fields and fields[0] == "cpu%d" % cpu:
            return int(fields[8]) / USER_HZ
    raise ValueError("no cpu%d line in %s/stat" % (cpu, proc))


def start_worker(cpu, kind, seconds):
    return subprocess.Popen([sys.executable, "-c", WORKER, str(cpu), kind, str(seconds)],
                            stdout=subprocess.PIPE, text=True)


def measure_once(variant, measured_cpu, other_cpu, seconds):
    """One measurement: the integer loop on measured_cpu for `seconds`, the variant's neighbour on
    other_cpu for longer (it starts first and is stopped after)."""
    neighbour = None
    if variant != "alone":
        neighbour = start_worker(other_cpu, variant.split("_")[0], seconds + 5)
        time.sleep(0.5)
    steal_before = {cpu: steal_seconds(cpu) for cpu in (measured_cpu, other_cpu)}
    measured = start_worker(measured_cpu, "integer", seconds)
    rate = float(measured.communicate()[0])
    steal = {cpu: round(steal_seconds(cpu) - before, 2) for cpu, before in steal_before.items()}
    if neighbour is not None:
        neighbour.terminate()
        neighbour.wait()
    return {"variant": variant, "integer_loops_per_second": rate,
            "steal_seconds": {"measured_cpu": steal[measured_cpu], "other_cpu": steal[other_cpu]}}


def measure(rounds, seconds, measured_cpu=1, other_cpu=0, log=None):
    samples = []
    for round_ in range(rounds):
        for variant in VARIANTS:
            sample = dict(measure_once(variant, measured_cpu, other_cpu, seconds), round=round_)
            if log:
                log("round %d %s: %.0f loops/s, steal %s" % (round_ + 1, variant, sample["integer_loops_per_second"],
                                                             sample["steal_seconds"]))
            samples.append(sample)
    return samples


def summarize(samples):
    """Per variant the median rate; per neighbour the ratio to alone, computed within each round, with
    its spread over the rounds; steal time summed per variant."""
    rounds = sorted({s["round"] for s in samples})
    rate = {(s["round"], s["variant"]): s["integer_loops_per_second"] for s in samples}
    summary = {"variants": {}, "ratios": {}}
    for variant in VARIANTS:
        mine = [s for s in samples if s["variant"] == variant]
        summary["variants"][variant] = {
            "integer_loops_per_second_median": round(statistics.median(s["integer_loops_per_second"] for s in mine)),
            "steal_seconds_measured_cpu": round(sum(s["steal_seconds"]["measured_cpu"] for s in mine), 2),
            "steal_seconds_other_cpu": round(sum(s["steal_seconds"]["other_cpu"] for s in mine), 2)}
        if variant != "alone":
            summary["ratios"]["%s/alone" % variant] = stats.spread(
                [rate[(r, variant)] / rate[(r, "alone")] for r in rounds])
    return summary


def markdown(data):
    env = data["environment"]
    lines = ["# Are this machine's CPUs independent?", "", __doc__.split("\n\n", 1)[1].strip(), "",
             run_line(env) + " %d rounds of %d s per variant, interleaved; the "
             "measured loop on host CPU %d, the neighbour on host CPU %d." % (
                 data["rounds"], data["seconds"], data["measured_cpu"], data["other_cpu"]), "",
             "| variant | integer loops/s (median) | steal s, measured CPU | steal s, other CPU |", "|---|---|---|---|"]
    for variant, figures in data["summary"]["variants"].items():
        lines.append("| %s | %d | %.2f | %.2f |" % (
            variant, figures["integer_loops_per_second_median"], figures["steal_seconds_measured_cpu"],
            figures["steal_seconds_other_cpu"]))
    lines += ["", "| ratio (within each round) | median [min - max] | per round |", "|---|---|---|"]
    for name, spread in data["summary"]["ratios"].items():
        lines.append("| %s | %.3f [%.3f - %.3f] | %s |" % (
            name, spread["median"], spread["min"], spread["max"], " ".join("%.3f" % v for v in spread["per_repeat"])))
    lines += ["", "Machine before the run: %s." % ("; ".join(data["machine_check"]) or "quiet (no qemu, low load)"),
              ""]
    return "\n".join(lines)


def add_arguments(parser):
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--seconds", type=int, default=5, help="per measurement")
    add_force(parser)


def main(args):
    problems = machine.check_machine([], args.force, log)
    samples = measure(args.rounds, args.seconds, log=log)
    data = {"environment": environment(), "rounds": args.rounds, "seconds": args.seconds, "measured_cpu": 1,
            "other_cpu": 0, "machine_check": problems, "summary": summarize(samples), "samples": samples}
    write_report("host-cores", data, markdown(data))
