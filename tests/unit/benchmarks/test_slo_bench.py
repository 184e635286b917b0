"""The SLO benchmark: the guest's windows and stress-ng parsing, and the report's summary and goal."""

import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[3]
sys.path.insert(0, str(ROOT / "agent" / "cpuinfer_agent"))  # the VM gets stream_probe.py beside the runner
sys.path.insert(0, str(ROOT / "benchmarks" / "slo"))
sys.path.insert(0, str(ROOT / "benchmarks"))

import slo_bench  # noqa: E402
import slo_runner  # noqa: E402

STRESS_NG_YAML = """---
system-info:
      stress-ng-version: 0.15.06
metrics:
    - stressor: cpu
      bogo-ops: 1200
      bogo-ops-per-second-usr-sys-time: 21.5
      bogo-ops-per-second-real-time: 19.75
      wall-clock-time: 60.76
    - stressor: stream
      bogo-ops: 80
      bogo-ops-per-second-real-time: 1.32
"""


def test_gaps_fall_in_the_window_of_their_second_token():
    streams = [[0.0, 0.1, 0.3], [10.5, 11.0]]  # gaps of 100 and 200 ms in window 0, 500 ms in window 1
    assert slo_runner.windows(streams, 0.0, 19.0) == [200.0, 500.0]
    assert slo_runner.windows([[0.0, 0.1]], 0.0, 35.0) == [100.0]  # windows without gaps are no windows


def test_stress_ng_rates_by_stressor(tmp_path):
    path = tmp_path / "be.yaml"
    path.write_text(STRESS_NG_YAML)
    assert slo_runner.be_work(str(path)) == {"cpu": 19.75, "stream": 1.32}


def decision(action, quota, lent, source, mean, estimated, clients_p99, probe_tokens):
    return {"action": action, "after": {"quota_percent": quota, "lent_cores": lent}, "clients_p99_ms": clients_p99,
            "lc": {"bench": {"source": source, "mean_token_ms": mean, "estimated_p99_ms": estimated}},
            "probe_tokens": {"bench": probe_tokens}}


def run_(mode, repeat, windows, tokens, cpu):
    decisions = [decision("grow", 100, 1, "probe", None, None, None, 8),
                 decision("cut", 80, 0, "clients", 50.0, 60.0, 75.0, 16)] if mode == "controller" else []
    return {"mode": mode, "repeat": repeat, "window_p99_ms": windows, "tokens": tokens, "seconds": 100.0,
            "be_bogo_ops_per_second": {"cpu": cpu, "stream": 1.0}, "inference_cpu_idle_by_phase": [0.9, 0.1],
            "decisions": decisions}


def test_summary_and_goal():
    raw = {"slo_p99_ms": 50.0, "phases": [{"name": "calm", "clients": 0, "pause_s": 0.0},
                                          {"name": "busy", "clients": 2, "pause_s": 0.0}], "runs": [
        run_("none", 0, [400, 60, 70, 40], 300, 60.0), run_("shared", 0, [40, 60, 70, 40], 900, 30.0),
        run_("static", 0, [40, 40, 45, 40], 1000, 10.0), run_("controller", 0, [40, 40, 45, 49], 1000, 25.0),
        run_("none", 1, [400, 60, 70, 80], 300, 60.0), run_("shared", 1, [40, 60, 40, 40], 900, 30.0),
        run_("static", 1, [40, 40, 45, 40], 1000, 12.0), run_("controller", 1, [40, 40, 45, 49], 990, 24.0)],
        "config": {"base_cpus": "0", "lendable_cores": ["1-2", "3"], "min_percent": 20, "step_percent": 20,
                   "psi_some_max": 40, "min_interval_seconds": 5, "tail_factor": 1.2,
                   "instances": [{"name": "bench", "token_capacity_per_second": 20.0}]}}
    summary = slo_bench.summary(raw)
    assert summary["none"]["windows_within"]["per_repeat"] == [0.25, 0.0]
    assert summary["shared"]["windows_within"]["per_repeat"] == [0.5, 0.75]
    assert summary["controller"]["windows_within"]["median"] == 1.0
    assert summary["controller"]["be_over_static"]["cpu"]["per_repeat"] == [2.5, 2.0]
    assert summary["controller"]["decisions"]["grow"] == 2
    assert summary["controller"]["lent_share"] == 0.5
    # the probes' tokens at the run's last decision, over 20 tokens/s x 100 s of capacity
    assert summary["controller"]["probe_tokens"]["median"] == 16 and summary["controller"]["probe_share"]["median"] == 0.008
    assert summary["controller"]["reading_sources"] == {"probe": 2, "clients": 2}
    assert summary["controller"]["measured_tail_factor"]["median"] == 1.5  # the clients' 75 ms over the engine's 50
    assert summary["controller"]["estimate_over_clients_p99"]["median"] == 0.8
    assert summary["static"]["inference_cpu_idle_by_phase"][0]["median"] == 0.9
    # one CPU of its own, three it may be lent: at most 4x the static split's CPUs
    assert summary["ceiling"]["be_over_static_max"] == 4.0
    data = {"environment": {"command": "benchmarks/run slo", "date": "d", "commit": "c"}, "note": "n",
            "slo_p99_ms": 50.0, "calibration_p99_ms": 40.0, "phase_seconds": 30, "repeats": 2,
            "phases": raw["phases"], "summary": summary, "conditions": None}
    text = slo_bench.markdown(data)
    assert "| controller | 1.00 [1.00 1.00] |" in text
    assert "| none | 0.12 [0.25 0.00] |" in text and "- (no controller) |" in text
    assert "calm (clients paused), busy (2 clients)" in text
    # no isolation fails, both isolations hold, the stream work equals the static split's: 1x, below 1.2x
    assert "(median share within < 0.5): met; the static split and the controller hold >= 99 % of windows: met" in text
    assert "the static split's: not met." in text
    assert "at most 4 CPU(s) against the static split's 1 (ceiling 4.0x)" in text
    assert "a core lent in 50 % of its windows" in text
    assert "clients' p99 / engine mean median 1.50" in text


def test_the_controllers_windows_get_the_clients_real_p99():
    # wall = monotonic + 1000; a decision at wall 1010 closes the window (0, 10] in monotonic time
    streams = [[1.0 + 0.1 * i for i in range(12)], [20.0, 20.5]]
    decisions = [{"time": 1010.0}, {"time": 1030.0}]
    slo_runner.client_p99_by_decision(streams, decisions, 1000.0, 10)
    assert decisions[0]["clients_p99_ms"] == 100.0
    assert decisions[1]["clients_p99_ms"] is None  # one gap is no p99
