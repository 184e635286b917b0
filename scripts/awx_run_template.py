"""Run an AWX job template of files/awx/controller.yml through ansible-runner, as a job would:
the template's playbook, its extra_vars merged with the survey answers (defaults unless given),
become as the template says, and the given inventory.

Usage: python scripts/awx_run_template.py TEMPLATE_NAME INVENTORY [VAR=VALUE ...]
Prints the extra vars used and exits with the playbook's return code.
"""

import json
import os
import sys
import tempfile
from pathlib import Path

import ansible_runner
import yaml

REPO = Path(__file__).resolve().parent.parent


def template(name):
    data = yaml.safe_load((REPO / "files" / "awx" / "controller.yml").read_text())
    for entry in data["controller_templates"]:
        if entry["name"] == name:
            return entry
    raise SystemExit("no job template %r (have: %s)" % (name, ", ".join(t["name"] for t in data["controller_templates"])))


def survey(entry):
    """The template's survey questions (survey_spec.spec), none when the survey is off."""
    if not entry.get("survey_enabled"):
        return []
    return (entry.get("survey_spec") or {}).get("spec", [])


def extra_vars(entry, answers):
    """What AWX sends: template extra_vars, then survey answers (or their defaults)."""
    values = dict(entry.get("extra_vars") or {})
    for question in survey(entry):
        if question["variable"] in answers:
            raw = answers[question["variable"]]
            values[question["variable"]] = float(raw) if question["type"] == "float" else raw
        elif "default" in question:
            values[question["variable"]] = question["default"]
        elif question.get("required"):
            raise SystemExit("survey question %r has no default and no answer" % question["variable"])
    return values


def main():
    name, inventory = sys.argv[1], sys.argv[2]
    answers = dict(arg.split("=", 1) for arg in sys.argv[3:])
    entry = template(name)
    variables = extra_vars(entry, answers)
    print(json.dumps({"template": name, "playbook": entry["playbook"], "extra_vars": variables}))
    with tempfile.TemporaryDirectory(prefix="awx-job-") as private:
        result = ansible_runner.run(
            private_data_dir=private,
            project_dir=str(REPO),
            playbook=str(REPO / entry["playbook"]),
            inventory=str(Path(inventory).resolve()),
            extravars=variables,
            cmdline="--become" if entry.get("become_enabled") else None,
            envvars={"ANSIBLE_COLLECTIONS_PATH": os.environ.get("ANSIBLE_COLLECTIONS_PATH", ""),
                     "ANSIBLE_FORCE_COLOR": "false"},
            quiet=False,
        )
    return result.rc


if __name__ == "__main__":
    sys.exit(main())
