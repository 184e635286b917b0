"""AWX objects as code: every template points at a playbook of the project and asks for the
variables that playbook reads; the workflow runs canary, waits for approval, then the fleet."""

import re
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

REPO = Path(__file__).resolve().parents[3]
sys.path.insert(0, str(REPO / "scripts"))

import awx_run_template  # noqa: E402

CONTROLLER = yaml.safe_load((REPO / "files" / "awx" / "controller.yml").read_text())


# AWX's survey question types
SURVEY_TYPES = {"text", "textarea", "password", "integer", "float", "multiplechoice", "multiselect"}


@pytest.mark.parametrize("entry", CONTROLLER["controller_templates"], ids=lambda e: e["name"])
def test_templates_run_project_playbooks_that_read_their_survey(entry):
    playbook = REPO / entry["playbook"]
    assert playbook.exists()
    text = playbook.read_text()
    for question in awx_run_template.survey(entry):
        if question["variable"] == "target":
            assert "target | default(" in text or "target)" in text or "{{ target }}" in text
    assert entry["inventory"] in {i["name"] for i in CONTROLLER["controller_inventories"]}
    assert entry["project"] in {p["name"] for p in CONTROLLER["controller_projects"]}


@pytest.mark.parametrize("entry", CONTROLLER["controller_templates"], ids=lambda e: e["name"])
def test_surveys_are_in_awx_survey_spec_format(entry):
    assert entry["survey_enabled"] is True
    spec = entry["survey_spec"]
    assert spec["name"] and isinstance(spec["description"], str)
    for question in spec["spec"]:
        assert set(question) <= {"question_name", "question_description", "variable", "type", "required", "default",
                                 "choices", "min", "max"}
        assert question["type"] in SURVEY_TYPES and question["question_name"] and question["variable"]


def test_the_five_playbooks_have_templates():
    assert {e["playbook"] for e in CONTROLLER["controller_templates"]} == {
        "playbooks/site.yml", "playbooks/canary.yml", "playbooks/verify.yml", "playbooks/revert.yml",
        "playbooks/rollback.yml"}


def test_workflow_is_canary_then_approval_then_fleet():
    nodes = {n["identifier"]: n for n in CONTROLLER["controller_workflows"][0]["workflow_nodes"]}

    def successors(node):
        return [s["identifier"] for s in nodes[node]["related"]["success_nodes"]]
    assert successors("canary") == ["approve"] and nodes["approve"]["unified_job_template"]["type"] == "workflow_approval"
    assert successors("approve") == ["fleet"]
    assert nodes["canary"]["extra_data"]["target"] == "canary"
    templates = {t["name"] for t in CONTROLLER["controller_templates"]}
    assert {nodes[n]["unified_job_template"]["name"] for n in ("canary", "fleet")} <= templates


def test_every_variable_of_the_file_is_applied_by_the_playbook():
    """playbooks/awx_configure.yml loops over each controller_* list the file defines."""
    playbook = (REPO / "playbooks" / "awx_configure.yml").read_text()
    for name in CONTROLLER:
        assert 'loop: "{{ %s }}"' % name in playbook, name


def test_extra_vars_are_survey_defaults_or_answers():
    canary = awx_run_template.template("cpuinfer canary")
    assert awx_run_template.extra_vars(canary, {}) == {
        "target": "all", "health_gate_min_tokens_per_second": 5.0, "health_gate_max_p99_ms": 500,
        "health_gate_min_ratio": 0.9, "health_gate_max_p99_ratio": 1.25}
    assert awx_run_template.extra_vars(canary, {"health_gate_max_p99_ms": "900"})["health_gate_max_p99_ms"] == 900.0


@pytest.mark.parametrize("name", ["cpuinfer revert", "cpuinfer rollback"])
def test_revert_and_rollback_have_no_default_target(name):
    with pytest.raises(SystemExit, match="target"):
        awx_run_template.extra_vars(awx_run_template.template(name), {})


def test_execution_environment_pins_the_controller_versions():
    ee = yaml.safe_load((REPO / "files" / "awx" / "execution-environment.yml").read_text())
    pins = (REPO / "requirements" / "constraints.txt").read_text()
    assert ee["version"] == 3
    assert ee["dependencies"]["ansible_core"]["package_pip"] in pins
    assert ee["dependencies"]["ansible_runner"]["package_pip"] in pins


def _galaxy_version():
    return yaml.safe_load((REPO / "galaxy.yml").read_text())["version"]


def test_the_awx_objects_name_the_collections_own_version():
    """The tarball and the EE image are named by galaxy.yml's version (scripts/release rewrites them)."""
    text = "".join((REPO / "files" / "awx" / name).read_text() for name in ("execution-environment.yml", "controller.yml"))
    versions = set(re.findall(r"cpuinfer-llm-(?:ee:)?(\d+\.\d+\.\d+)", text))
    assert versions == {_galaxy_version()}


def test_the_execution_environment_context_carries_the_collection(tmp_path):
    """ansible-builder create, as files/awx/execution-environment.yml says to run it, in a copy of the layout."""
    bin_dir = Path(sys.executable).parent
    definition = tmp_path / "files" / "awx" / "execution-environment.yml"
    definition.parent.mkdir(parents=True)
    definition.write_text((REPO / "files" / "awx" / "execution-environment.yml").read_text())
    subprocess.run([str(bin_dir / "ansible-galaxy"), "collection", "build", "--output-path", str(tmp_path / ".build" / "ee"),
                    str(REPO)], check=True, capture_output=True)
    context = tmp_path / "context"
    subprocess.run([str(bin_dir / "ansible-builder"), "create", "-f", str(definition), "-c", str(context)],
                   check=True, capture_output=True)
    tarball = "cpuinfer-llm-%s.tar.gz" % _galaxy_version()
    assert (context / "_build" / "collections" / tarball).stat().st_size > 100_000
    requirements = yaml.safe_load((context / "_build" / "requirements.yml").read_text())
    assert requirements["collections"] == [{"name": "/build/collections/" + tarball, "type": "file"}]
    steps = (context / "Dockerfile").read_text()
    assert steps.index("COPY _build /build") < steps.index("ansible-galaxy collection install")
    assert "pyelftools==0.33" in (context / "_build" / "requirements.txt").read_text()
    assert "mmdebstrap" in (context / "_build" / "bindep.txt").read_text()


SLICED = {"cpuinfer verify"}


@pytest.mark.parametrize("entry", CONTROLLER["controller_templates"], ids=lambda e: e["name"])
def test_only_templates_whose_hosts_are_independent_are_sliced(entry):
    """A slice's inventory holds its hosts only: the canary's batches and site's front-door play (every
    backend's served instances) would each see a part of the fleet."""
    sliced = entry.get("job_slice_count", 1) > 1
    assert sliced == (entry["name"] in SLICED)
    if entry["name"] in ("cpuinfer canary", "cpuinfer site"):
        assert "slice" in entry["description"].lower()
    assert entry.get("ask_job_slice_count_on_launch", False) == sliced


@pytest.mark.parametrize("entry", CONTROLLER["controller_templates"], ids=lambda e: e["name"])
def test_templates_run_in_a_defined_instance_group(entry):
    groups = {g["name"]: g for g in CONTROLLER["controller_instance_groups"]}
    assert entry["instance_groups"] and set(entry["instance_groups"]) <= set(groups)
    assert all(entry["forks"] <= groups[name]["max_forks"] for name in entry["instance_groups"])


def test_the_workflow_never_slices_the_canary_steps():
    for node in CONTROLLER["controller_workflows"][0]["workflow_nodes"]:
        assert "job_slice_count" not in node and "job_slice_count" not in node.get("extra_data", {})
