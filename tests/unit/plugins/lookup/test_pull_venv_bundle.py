"""ansible-pull's venv for pull-mode hosts: the wheels for the host's machine and Python, one offline bundle
that installs a working ansible-pull, pins that are the controller's own."""

import importlib.metadata
import platform
import re
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

from ansible_collections.cpuinfer.llm.plugins.lookup import pull_venv_bundle as lookup

REPO = Path(__file__).resolve().parents[4]
PYTHON = "%d.%d" % sys.version_info[:2]


def test_every_pin_is_the_controllers_own():
    constraints = dict(line.strip().split("==", 1) for line in (REPO / "requirements" / "constraints.txt").read_text().splitlines()
                       if "==" in line and not line.startswith("#"))
    normal = dict((re.sub(r"[-_.]+", "-", name).lower(), version) for name, version in constraints.items())
    for name, version in lookup.pins():
        key = re.sub(r"[-_.]+", "-", name).lower()
        # pip and setuptools come with the controller's venv, not from constraints.txt
        expected = normal.get(key) or importlib.metadata.version(name)
        assert version == expected, (name, version, expected)


def test_what_it_cannot_fetch_for_is_refused_before_any_download(tmp_path):
    with pytest.raises(lookup.AnsibleLookupError, match="machine 'riscv64'"):
        lookup.pull_venv(str(tmp_path), "riscv64", "3.11")
    with pytest.raises(lookup.AnsibleLookupError, match="X.Y"):
        lookup.pull_venv(str(tmp_path), "x86_64", "3")
    assert list(tmp_path.iterdir()) == []
    unpinned = tmp_path / "req.txt"
    unpinned.write_text("ansible-core==2.19.14\njinja2>=3\n")
    with pytest.raises(lookup.AnsibleLookupError, match="not pinned"):
        lookup.pins(str(unpinned))


def test_an_other_machines_bundle_carries_that_machines_compiled_wheels(tmp_path):
    wanted = tmp_path / "req.txt"
    wanted.write_text("PyYAML==6.0.4\nidna==3.20\n")
    built = lookup.pull_venv(str(tmp_path / "cache"), "aarch64", "3.11", str(wanted))
    names = zipfile.ZipFile(built["bundle"]).read("wheels/ORDER").decode().split()
    assert names[0].startswith("installer-")
    yaml_wheel = [name for name in names if name.startswith("pyyaml-")]
    assert len(yaml_wheel) == 1 and "cp311" in yaml_wheel[0] and "aarch64" in yaml_wheel[0], names
    again = lookup.pull_venv(str(tmp_path / "cache"), "aarch64", "3.11", str(wanted))
    assert again == built  # found in the cache, the same bundle


@pytest.mark.skipif(platform.machine() not in lookup.MACHINES, reason="needs a machine the pull mode has wheels for")
def test_the_bundle_installs_an_ansible_pull_that_runs_a_playbook_offline(tmp_path):
    built = lookup.pull_venv(str(tmp_path / "cache"), platform.machine(), PYTHON)
    venv = tmp_path / "venvs" / built["digest"]
    install = subprocess.run([sys.executable, built["bundle"], str(venv), built["digest"]], capture_output=True, text=True,
                             check=False, env={"PATH": "/usr/bin:/bin"})
    assert install.returncode == 0, install.stderr
    python = str(venv / "bin" / "python")
    imports = subprocess.run([python, "-c", "import gguf, elftools, yaml, cryptography, setuptools, wheel, pip"],
                             capture_output=True, text=True, check=False)
    assert imports.returncode == 0, imports.stderr
    playbook = tmp_path / "local.yml"
    playbook.write_text("- hosts: localhost\n  gather_facts: false\n  tasks:\n"
                        "    - ansible.builtin.command:\n        argv: [\"true\"]\n      changed_when: false\n")
    ran = subprocess.run([str(venv / "bin" / "ansible-playbook"), "-c", "local", "-i", "localhost,", str(playbook)],
                         capture_output=True, text=True, check=False,
                         env={"PATH": "/usr/bin:/bin", "HOME": str(tmp_path), "ANSIBLE_LOCAL_TEMP": str(tmp_path / "tmp")})
    assert ran.returncode == 0 and "ok=1" in ran.stdout, ran.stdout + ran.stderr
    assert (venv / "bin" / "ansible-pull").exists()
