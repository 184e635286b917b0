"""The SLO governor's rule, its hysteresis and pacing, dry-run, and the quota parsing."""

import importlib
import subprocess
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[3]
PROMTOOL = REPO / ".build" / "tools" / "promtool"


@pytest.fixture(scope="module")
def gov():
    return importlib.import_module("cpuinfer_agent.slo_governor")


@pytest.mark.parametrize("p99, quota, expected", [
    (320, 50, 64),    # 1.28 x SLO: proportional, 50 * 1.28 = 64
    (300, 50, 50),    # exactly 1.2 x SLO is still inside the band
    (1000, 50, 65),   # 4 x SLO: capped at +30 %
    (1000, 190, 200),  # capped by the upper bound
    (1000, 200, 200),  # at the bound: hold
    (250, 50, 50),    # inside 0.8..1.2: hold
    (290, 50, 50),
    (100, 50, 47),    # below 0.8 x SLO: -5 %
    (100, 20, 20),    # at the lower bound
])
def test_rule(gov, p99, quota, expected):
    new, reason = gov.decide(p99, 250, quota, 20, 200)
    assert new == expected
    assert reason


@pytest.mark.parametrize("text, percent", [("400ms", 40), ("1.500000s", 150), ("1s", 100), ("infinity", None),
                                           ("", None), ("250000us", 25)])
def test_parse_quota(gov, text, percent):
    assert gov.parse_quota(text) == percent


class FakeSystemd:
    unit = "cpuinfer-llama-x.service"

    def __init__(self, quota):
        self.current, self.writes = quota, []

    def quota(self):
        return self.current

    def set_quota(self, percent):
        self.writes.append(percent)
        self.current = percent


def config(**overrides):
    base = {"window_gaps": 4, "min_change_interval_seconds": 30, "slo_p99_ms": 250, "quota_min_percent": 20,
            "quota_max_percent": 200, "dry_run": False}
    base.update(overrides)
    return base


def test_governor_waits_for_a_full_window_and_the_interval(gov):
    now = [0.0]
    systemd = FakeSystemd(50)
    governor = gov.Governor(config(), systemd, clock=lambda: now[0], wall=lambda: 1.0)
    governor.observe([600, 600, 600])
    assert governor.step() is None  # three gaps, the window holds four
    governor.observe([600])
    record = governor.step()
    assert record["before_percent"] == 50 and record["after_percent"] == 65
    assert "raise" in record["reason"]
    assert systemd.writes == [65]
    governor.observe([600] * 4)
    now[0] = 10.0
    assert governor.step() is None  # minimum interval
    now[0] = 31.0
    assert governor.step()["after_percent"] == 85
    assert systemd.writes == [65, 85]


def test_window_restarts_after_a_change(gov):
    now = [0.0]
    governor = gov.Governor(config(min_change_interval_seconds=0), FakeSystemd(50), clock=lambda: now[0])
    governor.observe([600] * 4)
    assert governor.step()
    assert len(governor.gaps) == 0


def test_dry_run_logs_but_leaves_the_quota(gov):
    systemd = FakeSystemd(50)
    governor = gov.Governor(config(dry_run=True), systemd, clock=lambda: 0.0)
    governor.observe([100] * 4)
    record = governor.step()
    assert record["dry_run"] is True and record["after_percent"] == 47
    assert systemd.writes == [] and governor.quota == 50


def test_no_quota_starts_from_the_upper_bound(gov):
    assert gov.Governor(config(), FakeSystemd(None)).quota == 200


@pytest.mark.skipif(not PROMTOOL.exists(), reason="scripts/bootstrap puts promtool in .build/tools")
def test_governor_metrics_pass_promtool(gov):
    governor = gov.Governor(config(min_change_interval_seconds=0), FakeSystemd(50), clock=lambda: 0.0)
    governor.observe([600] * 4)
    governor.step()
    check = subprocess.run([str(PROMTOOL), "check", "metrics"], input=governor.prometheus_text(), capture_output=True,
                           text=True, check=False)
    assert check.returncode == 0, check.stdout + check.stderr
