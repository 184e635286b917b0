"""Role READMEs are generated from meta/argument_specs.yml and must not drift from it."""

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
