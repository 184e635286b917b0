"""tokens/s and inter-token latency of a streamed service under a noisy neighbour, untuned vs tuned.

Interleaved rounds on a 2-vCPU lab VM (benchmarks/isolation/). The report: ratios per repeat and their
spread, the goal, the service's own decode rate, the markdown table - pure functions of the samples
guest_runner.py returns, so a committed report can be recomputed from its samples (--from-samples)."""

import json
import statistics

import machine
import stats
from common import EMULATION_NOTE, OUT, add_vm_options, environment, in_lab_vm, run_line, write_report

ISOLATION_RATIOS = [("b_untuned_neighbour", "a_untuned"), ("c_tuned_neighbour", "a_tuned"),
                    ("d_untuned_membw_neighbour", "a_untuned"), ("e_tuned_membw_neighbour", "a_tuned"),
                    ("b_untuned_neighbour", "a_tuned"), ("c_tuned_neighbour", "a_untuned")]
# The ratios the isolation goal judges: each tuned service with a neighbour against itself alone.
ISOLATION_GOAL_RATIOS = [("c_tuned_neighbour", "a_tuned"), ("e_tuned_membw_neighbour", "a_tuned")]


def ratio_name(pair):
    return "%s/%s" % pair


def isolation_results(raws):
    """The repeats' raw samples -> each repeat's own summary, every ratio's spread over the repeats
    (each computed within one repeat) and the goal for the ratios it judges."""
    summaries = [stats.summarize(raw["samples"]) for raw in raws]
    per_repeat = [{ratio_name(pair): stats.ratio(summary, *pair) for pair in ISOLATION_RATIOS}
                  for summary in summaries]
    return {"summary_per_repeat": summaries, "ratios": stats.ratios_across_repeats(per_repeat),
            "goal": [stats.isolation_goal(per_repeat, ratio_name(pair)) for pair in ISOLATION_GOAL_RATIOS],
            "server_side": server_side_rates(raws)}


def server_side_rates(raws):
    """The service's decode rate as llama-server counted it (guest_runner reads its counters around
    every completion): per variant its median over all repeats, and the spread over the repeats of
    every ratio whose two variants both have it. The client's own figures include its delays on the
    housekeeping CPU; these do not. Variants without the figure (a server without --metrics, reports
    before 2026-12-02) are left out; None when no variant has it."""
    samples = [sample for raw in raws for sample in raw["samples"]]
    counted = sorted(variant for variant in {s["variant"] for s in samples}
                     if all(s.get("server_tokens_per_second") is not None for s in samples if s["variant"] == variant))
    if not counted:
        return None
    pairs = [pair for pair in ISOLATION_RATIOS if pair[0] in counted and pair[1] in counted]
    per_repeat = []
    for raw in raws:
        medians = {variant: statistics.median(s["server_tokens_per_second"] for s in raw["samples"] if s["variant"] == variant)
                   for variant in counted}
        per_repeat.append({ratio_name(pair): {"server_tokens_per_second": round(medians[pair[0]] / medians[pair[1]], 3)}
                           for pair in pairs})
    medians = {variant: round(statistics.median(s["server_tokens_per_second"] for s in samples if s["variant"] == variant), 3)
               for variant in counted}
    return {"tokens_per_second_median": medians, "ratios": stats.ratios_across_repeats(per_repeat) if pairs else {}}


def rendered_again(report, commit):
    """A committed isolation report recomputed from its own samples by this commit's summaries (new
    figures, the same measurement): its environment stays the run's, `rendered_by` names `commit`."""
    data = json.loads(report.read_text(encoding="utf-8"))
    raws = [{"samples": [s for s in data["samples"] if s["repeat"] == index]} for index in range(data["repeats"])]
    data.update(isolation_results(raws), summary=stats.summarize(data["samples"]), rendered_by=commit)
    return data


def markdown(data):
    env = data["environment"]
    lines = ["# Isolation under a noisy neighbour", "", data["note"], "",
             run_line(env, "; recomputed from its samples at commit %s" % data["rendered_by"] if "rendered_by" in data else ""),
             "", "VM: 2 vCPUs, model llama-bench (files/make_gguf_model.py). %d repeats of the whole measurement "
             "(%s s each); each repeat: %d rounds x %d completions x %d tokens per variant, the variants "
             "interleaved in every round. Neighbours: b/c `stress-ng --cpu`, d/e `stress-ng --stream` "
             "(memory bandwidth); b/d unconfined beside the untuned service, c/e in system.slice on the "
             "tuned host." % (data["repeats"], " / ".join(str(s) for s in data["measure_seconds"]), data["rounds"],
                              data["completions_per_variant"], data["tokens_per_completion"]), "",
             "| variant | tokens/s (median, all repeats) | median per repeat | ms/token | p50 gap ms | p99 gap ms |",
             "|---|---|---|---|---|---|"]
    for name, s in data["summary"].items():
        per_repeat = [summary[name]["tokens_per_second_median"] for summary in data["summary_per_repeat"]
                      if name in summary]
        lines.append("| %s | %.2f | %s | %.0f | %s | %s |" % (
            name, s["tokens_per_second_median"], " ".join("%.2f" % r for r in per_repeat),
            s["ms_per_token_median"], s["inter_token_p50_ms"], s["inter_token_p99_ms"]))
    lines += ["", "Ratios, computed per repeat; median [min - max] over the repeats, then each repeat's value:", "",
              "| ratio | tokens/s | per repeat | p99 gap | per repeat |", "|---|---|---|---|---|"]
    for name, r in data["ratios"].items():
        rate, p99 = r["tokens_per_second"], r["inter_token_p99"]
        lines.append("| %s | %.2f [%.2f - %.2f] | %s | %.2f [%.2f - %.2f] | %s |" % (
            name, rate["median"], rate["min"], rate["max"], " ".join("%.2f" % v for v in rate["per_repeat"]),
            p99["median"], p99["min"], p99["max"], " ".join("%.2f" % v for v in p99["per_repeat"])))
    lines += ["", "Goal (tuned + neighbour >= %.2fx solo tokens/s, p99 <= %.2fx):" % (
        stats.ISOLATION_GOAL["tokens_per_second"], stats.ISOLATION_GOAL["inter_token_p99"]), ""]
    for goal in data["goal"]:
        lines.append("- %s: met in %d of %d repeats; %s at the median." % (
            goal["ratio"], sum(goal["met_per_repeat"]), len(goal["met_per_repeat"]),
            "met" if goal["met_at_median"] else "not met"))
    lines += server_side_markdown(data.get("server_side"))
    lines += machine.conditions_markdown(data.get("conditions"))
    lines += ["", "Units as measured (systemctl show):", "", "```",
              json.dumps(data["units"], indent=1), "```", ""]
    return "\n".join(lines)


def server_side_markdown(server_side):
    if not server_side:
        return []
    lines = ["", "The service's own decode rate (llama-server's `tokens_predicted_total` over "
             "`tokens_predicted_seconds_total`, read around every completion; the measuring client's delays are "
             "not in it): median over the repeats per variant, then each ratio median [min - max] and per repeat:", "",
             "| variant | server tokens/s |", "|---|---|"]
    lines += ["| %s | %.2f |" % item for item in server_side["tokens_per_second_median"].items()]
    lines += ["", "| ratio | server tokens/s | per repeat |", "|---|---|---|"]
    for name, figures in server_side["ratios"].items():
        rate = figures["server_tokens_per_second"]
        lines.append("| %s | %.2f [%.2f - %.2f] | %s |" % (
            name, rate["median"], rate["min"], rate["max"], " ".join("%.2f" % v for v in rate["per_repeat"])))
    return lines


def add_arguments(parser):
    parser.add_argument("--rounds", type=int, default=4)
    parser.add_argument("--completions", type=int, default=2)
    parser.add_argument("--tokens", type=int, default=32)
    add_vm_options(parser)
    parser.add_argument("--report", default="isolation",
                        help="write docs/benchmarks/REPORT.{json,md} (a second run beside the first, to compare them)")
    parser.add_argument("--from-samples", action="store_true",
                        help="measure nothing: recompute REPORT from the samples it holds (after a change of the summaries)")
    machine.add_options(parser, repeats=3)


def main(args):
    if args.from_samples:
        data = rendered_again(OUT / ("%s.json" % args.report), environment()["commit"])
        write_report(args.report, data, markdown(data))
        return
    sizes = {"bench_rounds": args.rounds, "bench_completions": args.completions, "bench_tokens": args.tokens}
    prepare_s, measure_s, raws, conditions = in_lab_vm("isolation", sizes, args, repeats=args.repeats)
    samples = [dict(sample, repeat=index) for index, raw in enumerate(raws) for sample in raw["samples"]]
    data = {"environment": environment(), "note": EMULATION_NOTE, "prepare_seconds": round(prepare_s),
            "measure_seconds": measure_s, "repeats": args.repeats, "rounds": args.rounds,
            "completions_per_variant": args.completions, "tokens_per_completion": args.tokens,
            "units": raws[-1]["units"], "summary": stats.summarize(samples),
            **isolation_results(raws),
            "conditions": conditions, "samples": samples}
    write_report(args.report, data, markdown(data))
