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


def test_spread_of_a_figure_over_repeats():
    spread = stats.spread([0.95, 0.69, 0.90])
    assert spread == {"median": 0.9, "min": 0.69, "max": 0.95, "relative_spread": round(0.26 / 0.9, 3),
                      "per_repeat": [0.95, 0.69, 0.9]}


def test_ratios_across_repeats_and_the_goal():
    per_repeat = [{"c/a": {"tokens_per_second": 0.95, "inter_token_p99": 1.07}},
                  {"c/a": {"tokens_per_second": 0.69, "inter_token_p99": 1.50}},
                  {"c/a": {"tokens_per_second": 0.92, "inter_token_p99": 1.20}}]
    across = stats.ratios_across_repeats(per_repeat)
    assert across["c/a"]["tokens_per_second"]["median"] == 0.92
    assert across["c/a"]["inter_token_p99"]["max"] == 1.5
    goal = stats.isolation_goal(per_repeat, "c/a")
    assert goal["met_per_repeat"] == [True, False, True]
    assert not goal["met_in_every_repeat"] and goal["met_at_median"]
    # a p99 just over the ceiling fails the goal whatever the rate
    assert not stats.isolation_goal([{"c/a": {"tokens_per_second": 1.0, "inter_token_p99": 1.26}}], "c/a")["met_at_median"]
