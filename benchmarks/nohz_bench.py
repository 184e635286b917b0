"""The instance with and without kernel isolation (nohz_full), interleaved, on a lab VM.

Each run converges with its mode (the role reboots into or out of it) and measures beside a timer-heavy
housekeeping neighbour (benchmarks/nohz/)."""

import statistics

import machine
import stats
from common import EMULATION_NOTE, add_vm_options, environment, in_lab_vm, run_line, write_report


def add_arguments(parser):
    parser.add_argument("--completions", type=int, default=6)
    parser.add_argument("--tokens", type=int, default=48)
    add_vm_options(parser)
    machine.add_options(parser, repeats=3)


def main(args):
    """The instance with and without nohz isolation (host_tuning_isolation), interleaved: each run
    converges with its mode (the role reboots into or out of it) and measures beside a timer-heavy
    housekeeping neighbour."""
    runs = [{"host_tuning_isolation": mode, "bench_completions": args.completions, "bench_tokens": args.tokens}
            for dummy in range(args.repeats) for mode in ("none", "nohz")]
    dummy_prepare, measure_s, raws, conditions = in_lab_vm("nohz", runs, args)
    data = {"environment": environment(), "note": EMULATION_NOTE + " " + NOHZ_NOTE, "repeats": args.repeats,
            "completions_per_run": args.completions, "tokens_per_completion": args.tokens, "measure_seconds": measure_s,
            "summary": nohz_summary(runs, raws), "conditions": conditions,
            "runs": [dict(raw, mode=run["host_tuning_isolation"]) for run, raw in zip(runs, raws)]}
    write_report("nohz", data, nohz_markdown(data))


NOHZ_NOTE = ("Under TCG the guest's timer tick is emulated work on the host thread of its vCPU, so stopping it "
             "(nohz_full) saves real time on that thread; what emulation cannot show is the cache and TLB "
             "disturbance a tick costs on real hardware, nor interrupts of real devices.")


def nohz_summary(runs, raws):
    """Per mode, a spread across runs of: tokens/s (median of the run's completions), p99 inter-token gap
    (pooled over the run's completions), local timer interrupts per second on the inference CPU."""
    figures = {}
    for run, raw in zip(runs, raws):
        mode = run["host_tuning_isolation"]
        gaps = [g for sample in raw["samples"] for g in sample["gaps_ms"]]
        per_run = figures.setdefault(mode, {"tokens_per_second": [], "inter_token_p99_ms": [], "timer_irqs_per_second": []})
        per_run["tokens_per_second"].append(statistics.median(s["tokens_per_second"] for s in raw["samples"]))
        per_run["inter_token_p99_ms"].append(stats.percentile(gaps, 0.99))
        per_run["timer_irqs_per_second"].append(raw["local_timer_interrupts_per_second_cpu1"])
    summary = {mode: {name: stats.spread(values) for name, values in per_run.items()} for mode, per_run in figures.items()}
    summary["nohz_over_none"] = {
        "tokens_per_second": round(summary["nohz"]["tokens_per_second"]["median"] / summary["none"]["tokens_per_second"]["median"], 3),
        "inter_token_p99": round(summary["nohz"]["inter_token_p99_ms"]["median"] / summary["none"]["inter_token_p99_ms"]["median"], 3),
    }
    return summary


def nohz_markdown(data):
    summary, env = data["summary"], data["environment"]
    lines = ["# Kernel isolation (nohz_full): the instance with and without it", "",
             run_line(env) + " %d runs per mode, interleaved (none, nohz, ...), each after a converge that "
             "rebooted the VM into its mode through its own GRUB; %d completions of %d tokens per run, a timer-heavy "
             "neighbour (stress-ng timer 20 kHz + cyclic) on the housekeeping CPU." % (
                 data["repeats"], data["completions_per_run"],
                 data["tokens_per_completion"]), "",
             "| mode | tokens/s median (min-max) | p99 inter-token ms median (min-max) | timer IRQs/s on the inference CPU |",
             "|---|---|---|---|"]
    for mode in ("none", "nohz"):
        row = summary[mode]
        lines.append("| %s | %.2f (%.2f-%.2f) | %.1f (%.1f-%.1f) | %.0f (%.0f-%.0f) |" % (
            mode, row["tokens_per_second"]["median"], row["tokens_per_second"]["min"], row["tokens_per_second"]["max"],
            row["inter_token_p99_ms"]["median"], row["inter_token_p99_ms"]["min"], row["inter_token_p99_ms"]["max"],
            row["timer_irqs_per_second"]["median"], row["timer_irqs_per_second"]["min"], row["timer_irqs_per_second"]["max"]))
    ratio = summary["nohz_over_none"]
    lines += ["", "nohz over none: tokens/s %.3fx, p99 inter-token gap %.3fx." % (ratio["tokens_per_second"], ratio["inter_token_p99"]),
              "", data["note"], ""]
    return "\n".join(lines)
