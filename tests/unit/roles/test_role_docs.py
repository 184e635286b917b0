"""Role READMEs are generated from meta/argument_specs.yml and must not drift from it."""

import re
import subprocess
import sys
from pathlib import Path

import yaml

REPO = Path(__file__).resolve().parents[3]
sys.path.insert(0, str(REPO / "scripts"))

import role_docs  # noqa: E402


def test_readmes_match_the_argument_specs():
    result = subprocess.run([sys.executable, str(REPO / "scripts" / "role_docs.py"), "--check"],
                            capture_output=True, text=True, check=False)
    assert result.returncode == 0, result.stderr


def test_every_default_is_documented():
    for role in (REPO / "roles").iterdir():
        defaults = role / "defaults" / "main.yml"
        if not defaults.exists():
            continue
        documented = yaml.safe_load((role / "meta" / "argument_specs.yml").read_text())["argument_specs"]["main"]["options"]
        assert set(yaml.safe_load(defaults.read_text()) or {}) <= set(documented), role.name


def test_every_option_is_in_its_readme_with_markup_turned_into_markdown():
    for role in role_docs.roles():
        readme = (role / "README.md").read_text()
        specs = yaml.safe_load((role / "meta" / "argument_specs.yml").read_text())["argument_specs"]
        assert "# Ansible Role: cpuinfer.llm.%s" % role.name in readme
        for entry, spec in specs.items():
            assert "### Entrypoint: %s" % entry in readme, (role.name, entry)
            for name in spec.get("options", {}):
                assert "| %s |" % name in readme, (role.name, entry, name)
        assert not [mark for mark in ("C(", "O(", "V(", "RV(", "M(") if mark in readme], role.name
        example = readme.split("```yaml\n")[1].split("```")[0]
        assert yaml.safe_load(example)[0]["roles"] == [{"role": "cpuinfer.llm." + role.name}], role.name
    host_agent = (role_docs.REPO / "roles" / "host_agent" / "README.md").read_text()
    assert "`host_agent_bin`" in host_agent  # C(host_agent_bin) in the spec


# Specs say what, docs/roles.md says why: an option in a sentence or two, an entry point in a paragraph.
OPTION_CHARACTERS = 400
ENTRY_CHARACTERS = 1000
TASK_NAME_CHARACTERS = 90


def _text(description):
    return " ".join(description) if isinstance(description, list) else str(description or "")


def long_descriptions(specs):
    """'role entry option: N characters' for every description over its limit."""
    found = []

    def options(role, entry, given, prefix=""):
        for name, option in sorted((given or {}).items()):
            if len(_text(option.get("description"))) > OPTION_CHARACTERS:
                found.append("%s %s %s%s: %d characters" % (role, entry, prefix, name, len(_text(option["description"]))))
            options(role, entry, option.get("options"), prefix + name + ".")
    for role, entries in sorted(specs.items()):
        for entry, spec in sorted(entries.items()):
            if len(_text(spec.get("description"))) > ENTRY_CHARACTERS:
                found.append("%s %s: %d characters" % (role, entry, len(_text(spec["description"]))))
            options(role, entry, spec.get("options"))
    return found


def long_task_names(tasks):
    found = []
    for item in tasks or []:
        if isinstance(item, dict):
            name = item.get("name")
            # a template counts as a typical value of it (24 characters), not as its expression
            if isinstance(name, str) and len(re.sub(r"{{.*?}}", "x" * 24, name)) > TASK_NAME_CHARACTERS:
                found.append(name)
            for key in ("block", "rescue", "always", "tasks", "pre_tasks", "post_tasks", "handlers"):
                found += long_task_names(item.get(key))
    return found


def test_spec_descriptions_are_short():
    specs = {role.name: yaml.safe_load((role / "meta" / "argument_specs.yml").read_text())["argument_specs"]
             for role in (REPO / "roles").iterdir() if (role / "meta" / "argument_specs.yml").exists()}
    assert long_descriptions(specs) == []


def test_a_long_description_is_named():
    spec = {"demo": {"main": {"description": "x" * 1001, "options": {"a": {"description": ["y" * 300, "z" * 101]}}}}}
    assert long_descriptions(spec) == ["demo main: 1001 characters", "demo main a: 402 characters"]


def test_task_names_are_short():
    files = sorted((REPO / "roles").glob("*/tasks/*.yml")) + sorted((REPO / "roles").glob("*/handlers/*.yml")) + sorted(
        (REPO / "playbooks").rglob("*.yml"))
    found = ["%s: %s" % (path.relative_to(REPO), name) for path in files
             for name in long_task_names(yaml.safe_load(path.read_text()))]
    assert found == []
