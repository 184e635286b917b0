"""Facts computed once: a helper that several parts of the project need is defined in one place, and
the others import it (three percentiles once disagreed on an empty list)."""

import os
import re
import subprocess
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
# name -> where its one definition lives
ONE_DEFINITION = {
    "percentile": "agent/cpuinfer_agent/stream_probe.py",
    "spread": "benchmarks/stats.py",
    "forwarded_ports": "molecule/shared/lab_vm.py",
    "forwarded_port": "molecule/shared/lab_vm.py",
}


def python_files():
    listed = subprocess.run(["git", "ls-files", "--cached", "--others", "--exclude-standard", "*.py"], cwd=REPO,
                            capture_output=True, text=True, check=True).stdout.split()
    return [REPO / name for name in listed if (REPO / name).exists()]


def definitions(name, files):
    pattern = re.compile(r"^\s*def _?%s\(" % re.escape(name), re.MULTILINE)
    return sorted(os.path.relpath(path, REPO) for path in files if pattern.search(path.read_text(encoding="utf-8")))


@pytest.mark.parametrize("name", sorted(ONE_DEFINITION))
def test_defined_once(name):
    assert definitions(name, python_files()) == [ONE_DEFINITION[name]]


def test_a_second_definition_is_found(tmp_path):
    copy = tmp_path / "copy.py"
    copy.write_text("def percentile(values, fraction):\n    return 0.0\n")
    files = [REPO / ONE_DEFINITION["percentile"], copy]
    assert len(definitions("percentile", files)) == 2


def test_molecule_tests_read_the_lab_only_through_the_shared_helper():
    readers = [path for path in (REPO / "molecule").glob("*/tests/*.py") if "vm.json" in path.read_text(encoding="utf-8")]
    assert readers == []
