"""The isolation benchmark's report: ratios per repeat with their spread, the goal per repeat, the
server's own rate, a report recomputed from its samples."""

import json
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[3] / "benchmarks"))

import isolation_bench  # noqa: E402


def _isolation_samples(repeat, rates):
    return [{"variant": variant, "round": 0, "repeat": repeat, "tokens_per_second": rate, "first_token_ms": 50.0,
             "gaps_ms": [1000.0 / rate] * 10} for variant, rate in rates.items()]


def test_the_isolation_report_gives_every_ratio_per_repeat_and_the_goal_per_repeat():
    solo = {"a_untuned": 40.0, "a_tuned": 30.0, "b_untuned_neighbour": 10.0, "d_untuned_membw_neighbour": 20.0,
            "e_tuned_membw_neighbour": 24.0}
    repeats = [dict(solo, c_tuned_neighbour=28.5), dict(solo, c_tuned_neighbour=24.0), dict(solo, c_tuned_neighbour=29.0)]
    raws = [{"samples": _isolation_samples(index, rates)} for index, rates in enumerate(repeats)]
    data = {"environment": {"command": "benchmarks/run isolation", "date": "d", "commit": "c", "controller_cpu": "x",
                            "controller_cpus": 2},
            "note": "n", "repeats": 3, "measure_seconds": [200, 201, 199], "rounds": 1, "completions_per_variant": 1,
            "tokens_per_completion": 10, "units": {},
            "samples": [s for raw in raws for s in raw["samples"]], **isolation_bench.isolation_results(raws),
            "conditions": {"machine_check": [], "pinned": True, "qemu_threads_per_repeat": []}}
    data["summary"] = isolation_bench.stats.summarize(data["samples"])
    table = isolation_bench.markdown(data)
    assert "| c_tuned_neighbour | 28.50 | 28.50 24.00 29.00 |" in table
    assert "| c_tuned_neighbour/a_tuned | 0.95 [0.80 - 0.97] | 0.95 0.80 0.97 |" in table
    assert "- c_tuned_neighbour/a_tuned: met in 2 of 3 repeats; met at the median." in table
    assert "- e_tuned_membw_neighbour/a_tuned: met in 0 of 3 repeats; not met at the median." in table


def test_every_ratio_the_goal_judges_is_one_the_report_computes():
    assert set(isolation_bench.ISOLATION_GOAL_RATIOS) <= set(isolation_bench.ISOLATION_RATIOS)


def test_the_servers_own_rate_gives_its_ratios_per_repeat_and_none_without_it():
    def raw(rates):
        return {"samples": [dict(s, server_tokens_per_second=rates[s["variant"]] * 2)
                            for s in _isolation_samples(0, rates)]}
    solo = {"a_untuned": 40.0, "a_tuned": 30.0, "b_untuned_neighbour": 10.0, "c_tuned_neighbour": 27.0,
            "d_untuned_membw_neighbour": 20.0, "e_tuned_membw_neighbour": 24.0}
    server = isolation_bench.server_side_rates([raw(solo), raw(dict(solo, c_tuned_neighbour=15.0))])
    assert server["ratios"]["c_tuned_neighbour/a_tuned"]["server_tokens_per_second"]["per_repeat"] == [0.9, 0.5]
    assert server["tokens_per_second_median"]["c_tuned_neighbour"] == 42.0
    assert "| c_tuned_neighbour/a_tuned | 0.70 [0.50 - 0.90] | 0.90 0.50 |" in isolation_bench.server_side_markdown(server)
    assert isolation_bench.server_side_rates([{"samples": _isolation_samples(0, solo)}]) is None
    # a run whose untuned twin had no --metrics: the tuned ratios only
    tuned_only = [{"samples": [dict(s, server_tokens_per_second=None if "untuned" in s["variant"] else 1.0)
                               for s in _isolation_samples(0, solo)]}]
    expected = ["c_tuned_neighbour/a_tuned", "e_tuned_membw_neighbour/a_tuned"]
    assert sorted(isolation_bench.server_side_rates(tuned_only)["ratios"]) == expected


def test_a_report_is_recomputed_from_its_own_samples(tmp_path):
    rates = {"a_untuned": 40.0, "a_tuned": 30.0, "b_untuned_neighbour": 10.0, "c_tuned_neighbour": 27.0,
             "d_untuned_membw_neighbour": 20.0, "e_tuned_membw_neighbour": 24.0}
    samples = _isolation_samples(0, rates) + _isolation_samples(1, dict(rates, c_tuned_neighbour=15.0))
    report = tmp_path / "isolation-second.json"
    report.write_text(json.dumps({"repeats": 2, "samples": samples, "environment": {"commit": "abc"},
                                  "ratios": {}, "goal": []}), encoding="utf-8")
    data = isolation_bench.rendered_again(report, "def")
    assert data["environment"] == {"commit": "abc"} and data["rendered_by"] == "def"
    assert data["ratios"]["c_tuned_neighbour/a_tuned"]["tokens_per_second"]["per_repeat"] == [0.9, 0.5]
    assert data["goal"][0]["met_per_repeat"] == [True, False]
