"""The nohz benchmark: the guest's timer interrupt reading and the report's summary."""

import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[3]
sys.path.insert(0, str(ROOT / "agent" / "cpuinfer_agent"))
sys.path.insert(0, str(ROOT / "benchmarks" / "nohz"))
sys.path.insert(0, str(ROOT / "benchmarks"))

import nohz_bench  # noqa: E402
import nohz_runner  # noqa: E402

INTERRUPTS = """           CPU0       CPU1
  0:         40          0   IO-APIC   2-edge      timer
LOC:     123456        789   Local timer interrupts
"""


def test_local_timer_interrupts_of_a_cpu(monkeypatch):
    monkeypatch.setattr(nohz_runner, "read", lambda path: INTERRUPTS)
    assert nohz_runner.interrupts_on(1) == 789 and nohz_runner.interrupts_on(0) == 123456


def _raw(rate, gaps, irqs):
    return {"samples": [{"tokens_per_second": rate, "gaps_ms": gaps}, {"tokens_per_second": rate + 2, "gaps_ms": gaps}],
            "local_timer_interrupts_per_second_cpu1": irqs}


def test_summary_per_mode_and_the_ratio():
    runs = [{"host_tuning_isolation": mode} for mode in ("none", "nohz", "none", "nohz")]
    raws = [_raw(10, [100, 120], 250), _raw(12, [90, 100], 3), _raw(10, [100, 140], 250), _raw(12, [90, 110], 4)]
    summary = nohz_bench.nohz_summary(runs, raws)
    assert summary["none"]["tokens_per_second"]["per_repeat"] == [11, 11]
    assert summary["nohz"]["inter_token_p99_ms"]["per_repeat"] == [100, 110]
    assert summary["nohz"]["timer_irqs_per_second"]["median"] == 3.5
    assert summary["nohz_over_none"] == {"tokens_per_second": round(13 / 11, 3), "inter_token_p99": round(105 / 130, 3)}
    data = {"summary": summary, "environment": {"command": "benchmarks/run nohz", "date": "d", "commit": "c"},
            "repeats": 2, "completions_per_run": 2, "tokens_per_completion": 48, "note": "n"}
    assert "| nohz | 13.00" in nohz_bench.nohz_markdown(data)
