"""The agent's install bundle as a host runs it (`python3 BUNDLE VENV DIGEST`): one run makes a working venv
with the marker written last, redoes an interrupted install, keeps the newest earlier install only, and the
same inputs give the same bundle bytes."""

import os
import subprocess
import sys
import time
import zipfile

import pytest

from ansible_collections.cpuinfer.llm.plugins.lookup import host_agent_wheel as lookup
from ansible_collections.cpuinfer.llm.plugins.plugin_utils import wheels as bundles


@pytest.fixture(scope="module")
def built(tmp_path_factory, agent_deps):
    return lookup.agent_wheel(str(tmp_path_factory.mktemp("cache")), deps=agent_deps)


def run_bundle(bundle, *args):
    return subprocess.run([sys.executable, bundle, *args], capture_output=True, text=True, check=False,
                          env=dict(os.environ, PYTHONPATH=""))


def test_one_run_makes_a_venv_whose_programs_start_and_marks_it_last(tmp_path, built):
    venv = tmp_path / "agent" / built["digest"]
    done = run_bundle(built["bundle"], str(venv), built["digest"])
    assert done.returncode == 0, done.stderr
    assert (venv / ".cpuinfer-installed").read_text() == built["digest"] + "\n"
    # nothing else: the unpacked wheels are not left behind (lib64 and include come with venv on some Pythons)
    assert set(p.name for p in venv.iterdir()) - {"include", "lib64"} == {".cpuinfer-installed", "bin", "lib", "pyvenv.cfg"}
    entry = venv / "bin" / "cpuinfer-wait-ready"
    assert entry.read_text().splitlines()[0] == "#!" + str(venv / "bin" / "python")
    loads = subprocess.run([str(venv / "bin" / "python"), "-c", "import cpuinfer_agent.metrics, prometheus_client"],
                           capture_output=True, text=True, check=False)
    assert loads.returncode == 0, loads.stderr


def test_an_interrupted_install_is_redone_from_scratch(tmp_path, built):
    venv = tmp_path / "agent" / built["digest"]
    (venv / "bin").mkdir(parents=True)
    (venv / "bin" / "python").write_text("half-written\n")
    (venv / "lib").mkdir()
    (venv / "lib" / "junk").write_text("x")
    done = run_bundle(built["bundle"], str(venv), built["digest"])
    assert done.returncode == 0, done.stderr
    assert not (venv / "lib" / "junk").exists()
    assert subprocess.run([str(venv / "bin" / "python"), "-c", "import cpuinfer_agent, prometheus_client"],
                          check=False).returncode == 0


def test_the_newest_earlier_install_stays_older_ones_go(tmp_path, built):
    prefix = tmp_path / "agent"
    for age, name in enumerate(["oldest", "older", "previous"]):
        (prefix / name / "bin").mkdir(parents=True)
        stamp = time.time() - 3600 + age * 60
        os.utime(prefix / name, (stamp, stamp))
    done = run_bundle(built["bundle"], str(prefix / built["digest"]), built["digest"])
    assert done.returncode == 0, done.stderr
    assert sorted(p.name for p in prefix.iterdir()) == sorted([built["digest"], "current", "previous"])
    assert "earlier installs removed: oldest, older" in done.stdout


def test_current_points_at_the_last_install_even_after_an_interrupted_switch(tmp_path, built):
    prefix = tmp_path / "agent"
    (prefix / "previous" / "bin").mkdir(parents=True)
    os.symlink("previous", prefix / "current")
    os.symlink("previous", prefix / "current.tmp")  # an earlier run stopped between the two steps
    done = run_bundle(built["bundle"], str(prefix / built["digest"]), built["digest"])
    assert done.returncode == 0, done.stderr
    assert os.readlink(prefix / "current") == built["digest"] and not os.path.lexists(prefix / "current.tmp")
    assert (prefix / "current" / "bin" / "cpuinfer-stop-when-idle").exists()


def test_a_relative_venv_path_is_refused_and_nothing_is_made(tmp_path, built):
    done = run_bundle(built["bundle"], "relative/venv", built["digest"])
    assert done.returncode == 2 and "usage" in done.stderr
    assert not (tmp_path / "relative").exists()


def test_the_same_inputs_give_the_same_bundle_bytes_and_a_changed_program_a_new_one(tmp_path, built):
    wheels = built["dependencies"] + [built["path"]]
    first = bundles.install_bundle(wheels, built["installer"], str(tmp_path))
    assert open(first, "rb").read() == open(built["bundle"], "rb").read()
    assert zipfile.ZipFile(first).read("wheels/ORDER").decode().split()[0].startswith("installer-")
    changed_main = tmp_path / "main.py"
    changed_main.write_text(open(bundles.BUNDLE_MAIN).read() + "\n# changed\n")
    assert bundles.install_bundle(wheels, built["installer"], str(tmp_path), str(changed_main)) != first
