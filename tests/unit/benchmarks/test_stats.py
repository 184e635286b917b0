"""The benchmark summaries: the numbers the committed reports are made of."""

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[3] / "benchmarks"))

import stats  # noqa: E402


def sample(variant, round_index, rate, gaps):
    return {"variant": variant, "round": round_index, "tokens_per_second": rate, "first_token_ms": 100.0,
            "gaps_ms": gaps}


def test_percentile_nearest_rank():
    values = list(range(1, 101))
    assert stats.percentile(values, 0.5) == 51
    assert stats.percentile(values, 0.99) == 99
    assert stats.percentile([], 0.99) is None


def test_summary_and_ratios():
    samples = [sample("a", 0, 10.0, [100.0] * 9), sample("a", 1, 12.0, [80.0] * 9),
               sample("b", 0, 5.0, [200.0] * 8 + [900.0]), sample("b", 1, 4.0, [250.0] * 9)]
    summary = stats.summarize(samples)
    assert summary["a"]["tokens_per_second_median"] == 11.0
    assert summary["a"]["tokens_per_second_per_round"] == [10.0, 12.0]
    assert summary["b"]["inter_token_p99_ms"] == 900.0
    assert stats.ratio(summary, "b", "a") == {"tokens_per_second": round(4.5 / 11.0, 3), "inter_token_p99": 9.0}
