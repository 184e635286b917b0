"""The rollout load's classification: an error fails, a stream that ends short of its length is truncated, one that reaches it completes."""

import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[3] / "benchmarks" / "rollout"))
import load  # noqa: E402  (a script directory, not a package)


def test_outcomes():
    assert load.classify("length", None) == "completed"
    assert load.classify("stop", None) == "truncated"
    assert load.classify(None, None) == "truncated"
    assert load.classify("length", "APIConnectionError: reset") == "failed"


def test_summary_counts_outcomes_and_ttft_per_phase():
    requests = [{"outcome": "completed", "phase": "steady", "ttft_s": t} for t in (0.1, 0.2, 0.3)]
    requests += [{"outcome": "truncated", "phase": "rollout", "ttft_s": 0.5},
                 {"outcome": "failed", "phase": "rollout", "ttft_s": None}]
    summary = load.summarise(requests)
    assert (summary["sent"], summary["completed"], summary["truncated"], summary["failed"]) == (5, 3, 1, 1)
    assert summary["ttft_p99_s_steady"] == 0.3 and summary["ttft_p50_s_steady"] == 0.2
    assert summary["ttft_p99_s_rollout"] == 0.5 and summary["sent_rollout"] == 2


def test_the_calibrated_interval_offers_a_share_of_what_the_slowest_slot_serves():
    calibration = [{"outcome": "completed", "seconds": s, "error": None} for s in (2.0, 4.0)]
    assert load.calibrated_interval(calibration, 0.5) == 8.0  # the slowest: one request per 4 s; half of it
    assert load.calibrated_interval(calibration, 1.0) == 4.0


def test_a_calibration_with_a_failed_request_stops_the_load():
    calibration = [{"outcome": "completed", "seconds": 2.0, "error": None},
                   {"outcome": "failed", "seconds": 0.1, "error": "APIConnectionError"}]
    with pytest.raises(SystemExit, match="did not all complete"):
        load.calibrated_interval(calibration, 0.5)
