"""The rollout benchmark's rows, goal and report."""

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[3] / "benchmarks"))
import rollout_bench  # noqa: E402  (a script directory, not a package)


def _run(variant, failed=0, truncated=0, steady=1.0, during=1.5):
    requests = [{"index": 0, "phase": "rollout", "outcome": "failed", "error": "APIConnectionError: x"}] * failed
    return {"variant": variant, "repeat": 0, "rollout_seconds": 200, "requests": requests,
            "summary": {"sent": 10, "completed": 10 - failed - truncated, "failed": failed, "truncated": truncated,
                        "ttft_p99_s_steady": steady, "ttft_p99_s_rollout": during}}


def test_without_drain_the_rollout_sends_no_front_doors():
    assert rollout_bench.extra_vars(rollout_bench.VARIANTS[1], 90) == {"bench_cpu_weight": 90, "llama_server_frontdoor_hosts": []}
    assert rollout_bench.extra_vars(rollout_bench.VARIANTS[2], 100) == {"bench_cpu_weight": 100}


def test_the_goal_needs_no_loss_and_ttft_within_twice_steady():
    assert rollout_bench.goal([rollout_bench.row(_run("front door, drain"))]) is True
    assert rollout_bench.goal([rollout_bench.row(_run("front door, drain", truncated=1))]) is False
    assert rollout_bench.goal([rollout_bench.row(_run("front door, drain", during=2.5))]) is False
    assert rollout_bench.goal([rollout_bench.row(_run("no front door", failed=3))]) is None


def test_the_report_has_a_row_per_run_and_names_the_lost_requests():
    data = {"environment": {"command": "benchmarks/run rollout", "date": "d", "commit": "c"}, "tokens": 32,
            "interval": 1.0, "steady_seconds": 30, "after_seconds": 15, "machine_check": [],
            "runs": [_run("no front door", failed=2), _run("front door, drain")]}
    text = rollout_bench.markdown(data)
    assert "| no front door | 1 | 10 | 8 | 2 | 0 | 1.00 | 1.50 | 1.50 | 200 |" in text
    assert "Goal (front door with drain" in text and ": met." in text
    assert "- no front door, request 0 (rollout): failed, APIConnectionError: x" in text


def test_only_restarting_variants_change_the_weight():
    assert rollout_bench.weights(list(rollout_bench.VARIANTS) * 2) == [90, 100, 90, 90, 100, 90, 100, 100]
