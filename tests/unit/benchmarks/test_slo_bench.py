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


def run_(mode, repeat, windows, tokens, cpu):
    return {"mode": mode, "repeat": repeat, "window_p99_ms": windows, "tokens": tokens, "seconds": 100.0,
            "be_bogo_ops_per_second": {"cpu": cpu, "stream": 1.0},
            "decisions": [{"action": "grow", "after": {"quota_percent": 100, "lent_cores": 1}},
                          {"action": "cut", "after": {"quota_percent": 80, "lent_cores": 0}}] * (mode == "controller")}


def test_summary_and_goal():
    raw = {"slo_p99_ms": 50.0, "runs": [
        run_("shared", 0, [40, 60, 70, 40], 900, 30.0), run_("static", 0, [40, 40, 45, 40], 1000, 10.0),
        run_("controller", 0, [40, 40, 45, 49], 1000, 25.0),
        run_("shared", 1, [40, 60, 40, 40], 900, 30.0), run_("static", 1, [40, 40, 45, 40], 1000, 12.0),
        run_("controller", 1, [40, 40, 45, 49], 990, 24.0)],
        "config": {"base_cpus": "0", "lendable_cores": ["1-2", "3"], "min_percent": 20, "step_percent": 20,
                   "psi_some_max": 40, "min_interval_seconds": 5}}
    summary = slo_bench.summary(raw)
    assert summary["shared"]["windows_within"]["per_repeat"] == [0.5, 0.75]
    assert summary["controller"]["windows_within"]["median"] == 1.0
    assert summary["controller"]["be_over_static"]["cpu"]["per_repeat"] == [2.5, 2.0]
    assert summary["controller"]["decisions"]["grow"] == 2
    assert summary["controller"]["lent_share"] == 0.5
    # one CPU of its own, three it may be lent: at most 4x the static split's CPUs
    assert summary["ceiling"]["be_over_static_max"] == 4.0
    data = {"environment": {"command": "benchmarks/run slo", "date": "d", "commit": "c"}, "note": "n",
            "slo_p99_ms": 50.0, "calibration_p99_ms": 40.0, "phase_seconds": 30, "repeats": 2,
            "phases": [{"name": "calm", "clients": 1, "pause_s": 2.0}, {"name": "busy", "clients": 2, "pause_s": 0.0}],
            "summary": summary, "conditions": None}
    text = slo_bench.markdown(data)
    assert "| controller | 1.00 [1.00 1.00] |" in text
    assert "windows met, work not met" in text  # stream work equals the static split's: 1x
    assert "at most 4 CPU(s) against the static split's 1 (ceiling 4.0x)" in text
    assert "a core lent in 50 % of its windows" in text
