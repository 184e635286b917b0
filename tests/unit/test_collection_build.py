"""`ansible-galaxy collection build` gives an installable tarball without build or lab state."""

import json
import os
import subprocess
import sys
import tarfile
from pathlib import Path

import yaml

REPO = Path(__file__).resolve().parents[2]
GALAXY = str(Path(sys.executable).with_name("ansible-galaxy"))
# What a user of the collection gets, and nothing else: the code that runs (modules, helpers, filters,
# roles, playbooks, the host agent's sources its lookup builds into a wheel), the example inventory, the files the roles and AWX need, the docs, and the unit
# tests that run without the lab. The lab, molecule, scripts and benchmarks stay out whole.
ALLOWED = ("MANIFEST.json", "FILES.json", "README.md", "CHANGELOG.rst", "meta/", "plugins/", "roles/", "playbooks/", "agent/",
           "inventories/example/", "files/", "docs/", "changelogs/", "tests/unit/")
ALLOWED_DIRECTORIES = ("meta", "plugins", "roles", "playbooks", "agent", "inventories", "inventories/example", "files",
                       "docs", "changelogs", "tests", "tests/unit")


def test_build_and_install(tmp_path):
    env = dict(os.environ, ANSIBLE_COLLECTIONS_PATH=str(tmp_path / "installed"))
    subprocess.run([GALAXY, "collection", "build", "--output-path", str(tmp_path), str(REPO)],
                   check=True, capture_output=True, env=env)
    version = yaml.safe_load((REPO / "galaxy.yml").read_text(encoding="utf-8"))["version"]
    tarball = tmp_path / ("cpuinfer-llm-%s.tar.gz" % version)
    with tarfile.open(tarball) as archive:
        names = archive.getnames()
    assert "plugins/modules/cgroup_v2.py" in names and "roles/llama_server/tasks/main.yml" in names
    outside = [n for n in names if not n.startswith(ALLOWED) and n not in ALLOWED and n not in ALLOWED_DIRECTORIES]
    assert outside == [], "shipped outside the allow-list: %s" % outside
    leaked = [n for n in names if n.split("/")[0] in (".build", ".venv", "lab", "scripts", "tests") and
              not n.startswith("tests/unit")]
    assert not [n for n in leaked if not n.startswith("tests")], leaked
    assert not [n for n in names if "__pycache__" in n or n.startswith("tests/output")]
    # what needs the unshipped lab, scripts or benchmarks stays out, and so does test state
    unshipped = ("molecule/", "inventories/lab/", ".hypothesis/", ".config/", "tests/unit/benchmarks/")
    assert not [n for n in names if n.startswith(unshipped) or (n.startswith("docs/benchmarks/") and n.endswith(".json"))]
    assert "docs/benchmarks/isolation.md" in names and "inventories/example/hosts.yml" in names
    # no dependency: a user on a network without Galaxy installs the tarball alone
    subprocess.run([GALAXY, "collection", "install", "-p", str(tmp_path / "installed"), str(tarball)],
                   check=True, capture_output=True, env=env)
    assert json.loads(tarfile.open(tarball).extractfile("MANIFEST.json").read())["collection_info"]["dependencies"] == {}
    installed = tmp_path / "installed/ansible_collections/cpuinfer/llm"
    assert (installed / "plugins/modules/thp.py").exists()
    # the installed collection builds the agent from its own files, as a user's controller does
    build = subprocess.run([sys.executable, "-c", "import sys; sys.path.insert(0, sys.argv[1]);"
                            "from ansible_collections.cpuinfer.llm.plugins.lookup.host_agent_wheel import agent_wheel;"
                            "print(agent_wheel(sys.argv[2])['path'])", str(tmp_path / "installed"), str(tmp_path / "wheels")],
                           capture_output=True, text=True, check=False)
    assert build.returncode == 0, build.stderr
    assert build.stdout.strip().startswith(str(tmp_path / "wheels"))
