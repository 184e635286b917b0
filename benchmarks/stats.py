"""Summaries of benchmark samples: medians, pooled latency percentiles, ratios between variants."""

import statistics


def percentile(values, fraction):
    """Nearest-rank percentile (the same rule as the health gate's probe)."""
    ordered = sorted(values)
    if not ordered:
        return None
    return ordered[min(len(ordered) - 1, int(round(fraction * (len(ordered) - 1))))]


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
