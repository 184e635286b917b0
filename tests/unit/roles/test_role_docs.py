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


def test_markup_becomes_markdown():
    assert role_docs.plain("V(absent) removes C(cpu.max) (see O(x))") == "`absent` removes `cpu.max` (see `x`)"
