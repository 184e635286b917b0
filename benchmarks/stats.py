"""Summaries of benchmark samples: medians, pooled latency percentiles, ratios between variants."""

import statistics
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "agent"))

from cpuinfer_agent.stream_probe import percentile  # noqa: E402  pylint: disable=wrong-import-position


def summarize_variant(samples):
    """One variant's completions -> rate and latency figures, plus per-round medians to show noise."""
    rates = [s["tokens_per_second"] for s in samples]
    gaps = [g for s in samples for g in s["gaps_ms"]]
    rounds = sorted({s["round"] for s in samples})
    return {
        "completions": len(samples),
        "tokens_per_second_median": round(statistics.median(rates), 3),
        "tokens_per_second_per_round": [
            round(statistics.median(s["tokens_per_second"] for s in samples if s["round"] == r), 3) for r in rounds],
        "ms_per_token_median": round(1000 / statistics.median(rates), 1),
        "first_token_ms_median": round(statistics.median(s["first_token_ms"] for s in samples), 1),
        "inter_token_p50_ms": percentile(gaps, 0.50),
        "inter_token_p99_ms": percentile(gaps, 0.99),
    }


def summarize(samples):
    variants = sorted({s["variant"] for s in samples})
    return {v: summarize_variant([s for s in samples if s["variant"] == v]) for v in variants}


def ratio(summary, variant, baseline):
    """variant/baseline for tokens/s and p99 inter-token latency."""
    mine, base = summary[variant], summary[baseline]
    return {
        "tokens_per_second": round(mine["tokens_per_second_median"] / base["tokens_per_second_median"], 3),
        "inter_token_p99": round(mine["inter_token_p99_ms"] / base["inter_token_p99_ms"], 3),
    }


def summarize_concurrency(trials):
    """{server: {clients: figures}} from load.py's trials: aggregate tokens/s is all streams' tokens
    over the trial's wall time (first start to last end), not chunk arrival; percentiles pool every
    stream of every round."""
    summary = {}
    for server in sorted({t["server"] for t in trials}):
        summary[server] = {}
        for clients in sorted({t["clients"] for t in trials if t["server"] == server}):
            chosen = [t for t in trials if t["server"] == server and t["clients"] == clients]
            streams = [s for t in chosen for s in t["streams"]]
            aggregate = [sum(s["tokens"] for s in t["streams"]) /
                         (max(s["end"] for s in t["streams"]) - min(s["start"] for s in t["streams"])) for t in chosen]
            first = [(s["first_token"] - s["start"]) * 1000 for s in streams if s["first_token"] is not None]
            gaps = [g for s in streams for g in s["gaps_ms"]]
            summary[server][str(clients)] = {
                "trials": len(chosen),
                "aggregate_tokens_per_second_median": round(statistics.median(aggregate), 3),
                "aggregate_tokens_per_second_per_round": [round(a, 3) for a in aggregate],
                "per_stream_tokens_per_second_median": round(statistics.median(
                    s["tokens"] / (s["end"] - s["start"]) for s in streams), 3),
                "first_token_p50_ms": round(percentile(first, 0.5), 1),
                "first_token_p99_ms": round(percentile(first, 0.99), 1),
                "inter_token_p50_ms": percentile(gaps, 0.5),
                "inter_token_p99_ms": percentile(gaps, 0.99),
            }
    return summary


def concurrency_goal(summary, server, clients=4, baseline=1):
    """The issue's goal: with `clients` streams, >= 2.5x the aggregate tokens/s of one, p99 inter-token <= 2x."""
    mine, base = summary[server][str(clients)], summary[server][str(baseline)]
    speedup = round(mine["aggregate_tokens_per_second_median"] / base["aggregate_tokens_per_second_median"], 2)
    p99 = round(mine["inter_token_p99_ms"] / base["inter_token_p99_ms"], 2) if base["inter_token_p99_ms"] else None
    return {"aggregate_speedup": speedup, "inter_token_p99_ratio": p99,
            "met": speedup >= 2.5 and p99 is not None and p99 <= 2.0}


def spread(values):
    """One figure measured once per repeat: its median, range and range over median, so a result says
    how far a rerun may land from it."""
    ordered = sorted(values)
    middle = statistics.median(ordered)
    return {"median": round(middle, 3), "min": round(ordered[0], 3), "max": round(ordered[-1], 3),
            "relative_spread": round((ordered[-1] - ordered[0]) / middle, 3) if middle else None,
            "per_repeat": [round(v, 3) for v in values]}


def quantiles(values):
    """{n, p10, median, p90} of many readings pooled across repeats; None when there is none."""
    if not values:
        return None
    return {"n": len(values), "p10": round(percentile(values, 0.1), 2), "median": round(percentile(values, 0.5), 2),
            "p90": round(percentile(values, 0.9), 2)}


def ratios_across_repeats(per_repeat):
    """[{ratio name: {figure: value}}] one dict per repeat -> {ratio name: {figure: spread}}."""
    names = per_repeat[0].keys()
    return {name: {figure: spread([repeat[name][figure] for repeat in per_repeat]) for figure in per_repeat[0][name]}
            for name in names}


# The isolation goal (issue 8): with a neighbour, the tuned service keeps >= 0.90x its tokens/s alone
# and <= 1.25x its p99 inter-token gap alone.
ISOLATION_GOAL = {"tokens_per_second": 0.90, "inter_token_p99": 1.25}


def isolation_goal(per_repeat, name):
    """Whether ratio `name` meets the goal in each repeat and at the median of the repeats."""
    def met(ratio_):
        return (ratio_["tokens_per_second"] >= ISOLATION_GOAL["tokens_per_second"]
                and ratio_["inter_token_p99"] <= ISOLATION_GOAL["inter_token_p99"])
    medians = {figure: statistics.median(repeat[name][figure] for repeat in per_repeat)
               for figure in ISOLATION_GOAL}
    per = [met(repeat[name]) for repeat in per_repeat]
    return {"ratio": name, "met_per_repeat": per, "met_in_every_repeat": all(per), "met_at_median": met(medians)}
