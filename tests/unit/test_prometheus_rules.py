"""The alert and recording rules: promtool accepts them, their unit tests (input series -> expected
alerts) pass, and every cpuinfer metric they read is one the agent (or verify.yml's drift filter) writes."""

import re
import subprocess
from pathlib import Path

import pytest
import yaml
from prometheus_client.parser import text_string_to_metric_families

from ansible_collections.cpuinfer.llm.plugins.plugin_utils._filter_drift_metrics import drift_exposition

from test_grafana_dashboard import emitted_names

REPO = Path(__file__).resolve().parents[2]
PROMTOOL = REPO / ".build" / "tools" / "promtool"
RULES = REPO / "files" / "prometheus" / "cpuinfer.rules.yml"
RULE_TESTS = REPO / "files" / "prometheus" / "tests" / "cpuinfer.rules.test.yml"

needs_promtool = pytest.mark.skipif(not PROMTOOL.exists(), reason="scripts/bootstrap unpacks promtool")


@needs_promtool
def test_promtool_accepts_the_rules():
    check = subprocess.run([str(PROMTOOL), "check", "rules", str(RULES)], capture_output=True, text=True, check=False)
    assert check.returncode == 0, check.stdout + check.stderr


@needs_promtool
def test_the_rules_unit_tests_pass():
    run = subprocess.run([str(PROMTOOL), "test", "rules", str(RULE_TESTS)], capture_output=True, text=True,
                         check=False, cwd=RULE_TESTS.parent)
    assert run.returncode == 0, run.stdout + run.stderr


def test_every_alert_has_a_test_and_reads_metrics_the_agent_writes(tmp_path):
    groups = yaml.safe_load(RULES.read_text())["groups"]
    rules = [rule for group in groups for rule in group["rules"]]
    recorded = {rule["record"] for rule in rules if "record" in rule}
    drift = drift_exposition({"h": [{"setting": "s", "in_sync": False}]}, 1.0)
    emitted = emitted_names(tmp_path) | recorded | {family.name for family in text_string_to_metric_families(drift)}
    for rule in rules:
        for name in re.findall(r"\b(cpuinfer_[a-z_]+|unit:[a-z_:0-9]+)", rule["expr"]):
            assert name in emitted, (rule.get("alert") or rule.get("record"), name)
    tested = {case["alertname"] for test in yaml.safe_load(RULE_TESTS.read_text())["tests"]
              for case in test.get("alert_rule_test", [])}
    alerts = {rule["alert"] for rule in rules if "alert" in rule}
    assert alerts == tested, alerts ^ tested
    for rule in rules:
        if "alert" in rule:
            assert rule["labels"]["severity"] in ("page", "ticket") and rule["annotations"]["summary"], rule["alert"]
