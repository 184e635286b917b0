"""The host-cores benchmark: steal time read from /proc/stat, ratios to alone computed within a round,
and the worker really measuring (a short run on this machine)."""

import subprocess
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[3] / "benchmarks"))

import cores_bench  # noqa: E402

STAT = """cpu  100 0 50 1000 0 0 0 9 0 0
cpu0 50 0 25 500 0 0 0 4 0 0
cpu1 50 0 25 500 0 0 0 250 0 0
intr 1
"""


def test_steal_is_the_eighth_counter_of_the_cpus_own_line_in_seconds(tmp_path):
    (tmp_path / "stat").write_text(STAT, encoding="ascii")
    assert cores_bench.steal_seconds(1, str(tmp_path)) == 2.5
    assert cores_bench.steal_seconds(0, str(tmp_path)) == 0.04
    with pytest.raises(ValueError, match="no cpu7 line"):
        cores_bench.steal_seconds(7, str(tmp_path))


def _sample(round_, variant, rate, steal=0.0):
    return {"round": round_, "variant": variant, "integer_loops_per_second": rate,
            "steal_seconds": {"measured_cpu": steal, "other_cpu": 0.0}}


def test_ratios_pair_each_round_with_its_own_alone_run():
    samples = [_sample(0, "alone", 100.0), _sample(0, "integer_neighbour", 80.0), _sample(0, "memory_neighbour", 90.0),
               _sample(1, "alone", 200.0, steal=0.5), _sample(1, "integer_neighbour", 100.0),
               _sample(1, "memory_neighbour", 200.0)]
    summary = cores_bench.summarize(samples)
    assert summary["ratios"]["integer_neighbour/alone"]["per_repeat"] == [0.8, 0.5]
    assert summary["ratios"]["memory_neighbour/alone"]["per_repeat"] == [0.9, 1.0]
    assert summary["variants"]["alone"]["integer_loops_per_second_median"] == 150
    assert summary["variants"]["alone"]["steal_seconds_measured_cpu"] == 0.5


def test_the_worker_pins_itself_and_reports_its_rate():
    out = subprocess.run([sys.executable, "-c", cores_bench.WORKER, "0", "integer", "0.2"], capture_output=True,
                         text=True, check=True).stdout
    assert float(out) > 0
    out = subprocess.run([sys.executable, "-c", cores_bench.WORKER, "0", "memory", "0.2"], capture_output=True,
                         text=True, check=True).stdout
    assert float(out) >= 32 * 1024 * 1024 / 0.2
