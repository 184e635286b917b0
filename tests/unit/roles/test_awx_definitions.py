"""AWX objects as code: every template points at a playbook of the project and asks for the
variables that playbook reads; the workflow runs canary, waits for approval, then the fleet."""

import sys
from pathlib import Path

import pytest
import yaml

REPO = Path(__file__).resolve().parents[3]
sys.path.insert(0, str(REPO / "scripts"))

import awx_run_template  # noqa: E402

CONTROLLER = yaml.safe_load((REPO / "files" / "awx" / "controller.yml").read_text())


@pytest.mark.parametrize("entry", CONTROLLER["job_templates"], ids=lambda e: e["name"])
def test_templates_run_project_playbooks_that_read_their_survey(entry):
    playbook = REPO / entry["playbook"]
    assert playbook.exists()
    text = playbook.read_text()
    for question in entry.get("survey", []):
        if question["variable"] == "target":
            assert "target | default(" in text or "target)" in text
    assert entry["inventory"] in {i["name"] for i in CONTROLLER["inventories"]}


def test_the_four_playbooks_have_templates():
    assert {e["playbook"] for e in CONTROLLER["job_templates"]} == {
        "playbooks/site.yml", "playbooks/canary.yml", "playbooks/verify.yml", "playbooks/revert.yml"}


def test_workflow_is_canary_then_approval_then_fleet():
    nodes = {n["identifier"]: n for n in CONTROLLER["workflow_job_templates"][0]["nodes"]}
    assert nodes["canary"]["success_nodes"] == ["approve"] and "approval" in nodes["approve"]
    assert nodes["approve"]["success_nodes"] == ["fleet"]
    assert nodes["canary"]["extra_data"]["target"] == "canary"


def test_extra_vars_are_survey_defaults_or_answers():
    canary = awx_run_template.template("cpuinfer canary")
    assert awx_run_template.extra_vars(canary, {}) == {
        "target": "all", "health_gate_min_tokens_per_second": 5.0, "health_gate_max_p99_ms": 500}
    assert awx_run_template.extra_vars(canary, {"health_gate_max_p99_ms": "900"})["health_gate_max_p99_ms"] == 900.0


def test_revert_has_no_default_target():
    with pytest.raises(SystemExit, match="target"):
        awx_run_template.extra_vars(awx_run_template.template("cpuinfer revert"), {})


def test_execution_environment_pins_the_controller_versions():
    ee = yaml.safe_load((REPO / "files" / "awx" / "execution-environment.yml").read_text())
    pins = (REPO / "requirements" / "constraints.txt").read_text()
    assert ee["version"] == 3
    assert ee["dependencies"]["ansible_core"]["package_pip"] in pins
    assert ee["dependencies"]["ansible_runner"]["package_pip"] in pins
