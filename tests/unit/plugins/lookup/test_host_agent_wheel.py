"""The host agent's wheel: what it carries, named by its sources, built once, the same bytes twice,
and installed in a venv of its own its programs import everything they need from it."""

import shutil
import subprocess
import zipfile
from pathlib import Path

import pytest

from ansible_collections.cpuinfer.llm.plugins.lookup import host_agent_wheel as lookup

REPO = Path(__file__).resolve().parents[4]
PROGRAMS = ["cpuinfer-irq-keeper", "cpuinfer-keep-idle", "cpuinfer-metrics", "cpuinfer-ready-report",
            "cpuinfer-slo-controller", "cpuinfer-stop-when-idle", "cpuinfer-stream-probe", "cpuinfer-wait-ready"]


@pytest.fixture
def sources(tmp_path):
    """A copy of the agent and the helpers, free to change."""
    shutil.copytree(REPO / "agent", tmp_path / "agent", ignore=shutil.ignore_patterns("__pycache__"))
    shutil.copytree(REPO / "plugins" / "module_utils", tmp_path / "module_utils",
                    ignore=shutil.ignore_patterns("__pycache__"))
    return str(tmp_path / "agent"), str(tmp_path / "module_utils")


def test_the_wheel_carries_the_agent_and_exactly_the_helpers_it_imports(tmp_path, agent_deps):
    wheel = lookup.agent_wheel(str(tmp_path / "cache"), deps=agent_deps)
    names = zipfile.ZipFile(wheel["path"]).namelist()
    helpers = sorted(Path(n).name for n in names if n.startswith(lookup.HELPER_TARGET.replace("\\", "/")))
    assert helpers == wheel["helpers"]
    assert {"_irq.py", "_cpulist.py", "_cgroupfs.py", "_sched.py", "_knobs.py"} <= set(helpers)
    assert "_runner.py" not in helpers and "_cgroup_plan.py" not in helpers  # module-only helpers stay out
    for helper in helpers:
        assert zipfile.ZipFile(wheel["path"]).read(lookup.HELPER_TARGET + "/" + helper) == \
            (REPO / "plugins" / "module_utils" / helper).read_bytes()
    entry_points = zipfile.ZipFile(wheel["path"]).read("cpuinfer_agent-1.0.0.dist-info/entry_points.txt").decode()
    assert all(program + " = cpuinfer_agent." in entry_points for program in PROGRAMS)
    metadata = zipfile.ZipFile(wheel["path"]).read("cpuinfer_agent-1.0.0.dist-info/METADATA").decode()
    assert "Requires-Dist: prometheus-client==0.26.0" in metadata
    assert [Path(p).name for p in wheel["dependencies"]] == ["prometheus_client-0.26.0-py3-none-any.whl"]
    assert Path(wheel["installer"]).name == "installer-0.7.0-py3-none-any.whl"


def test_same_sources_same_wheel_without_a_rebuild_and_the_same_bytes_elsewhere(tmp_path, sources, agent_deps):
    first = lookup.agent_wheel(str(tmp_path / "a"), *sources, deps=agent_deps)
    built_at = Path(first["path"]).stat().st_mtime_ns
    assert lookup.agent_wheel(str(tmp_path / "a"), *sources, deps=agent_deps) == first
    assert Path(first["path"]).stat().st_mtime_ns == built_at
    elsewhere = lookup.agent_wheel(str(tmp_path / "b"), *sources, deps=agent_deps)
    assert Path(elsewhere["path"]).read_bytes() == Path(first["path"]).read_bytes()


def test_a_changed_helper_or_program_makes_a_new_build(tmp_path, sources, agent_deps):
    agent, helpers = sources

    def digest():
        return lookup.agent_wheel(str(tmp_path / "c"), agent, helpers, deps=agent_deps)["digest"]

    before = digest()
    with open(Path(helpers) / "_cpulist.py", "a", encoding="utf-8") as handle:
        handle.write("\n# changed\n")
    after_helper = digest()
    with open(Path(agent) / "cpuinfer_agent" / "wait_ready.py", "a", encoding="utf-8") as handle:
        handle.write("\n# changed\n")
    after_program = digest()
    assert len({before, after_helper, after_program}) == 3
    # a helper the agent does not import changes nothing
    with open(Path(helpers) / "_cgroup_plan.py", "a", encoding="utf-8") as handle:
        handle.write("\n# changed\n")
    assert digest() == after_program


def test_an_unpinned_dependency_is_refused(tmp_path, sources):
    agent, helpers = sources
    pyproject = Path(agent) / "pyproject.toml"
    pyproject.write_text(pyproject.read_text().replace("prometheus-client==0.26.0", "prometheus-client>=0.20"))
    with pytest.raises(lookup.AnsibleLookupError, match="not pinned"):
        lookup.agent_wheel(str(tmp_path / "e"), agent, helpers, deps=str(tmp_path / "deps"))


def test_an_import_the_collection_cannot_satisfy_is_named(tmp_path, sources):
    agent, helpers = sources
    with open(Path(agent) / "cpuinfer_agent" / "metrics.py", "a", encoding="utf-8") as handle:
        handle.write("\nfrom ansible_collections.cpuinfer.llm.plugins.module_utils import _nothing_here\n")
    with pytest.raises(lookup.AnsibleLookupError, match="_nothing_here"):
        lookup.agent_wheel(str(tmp_path / "d"), agent, helpers)


def test_installed_alone_every_program_imports_from_its_own_venv(agent_venv):
    for program in PROGRAMS:
        assert (agent_venv / "bin" / program).exists(), program
    modules = "metrics slo_controller slo_rule keep_idle stop_when_idle irq_keeper stream_probe wait_ready ready_report unit_metrics".split()
    # -I: no user site, no PYTHONPATH, no current directory: only the venv's own packages
    check = subprocess.run([str(agent_venv / "bin" / "python"), "-I", "-c",
                            "import importlib, sys; [importlib.import_module('cpuinfer_agent.' + m) for m in sys.argv[1:]];"
                            "import cpuinfer_agent; print(cpuinfer_agent.__file__)"] + modules,
                           capture_output=True, text=True, check=False, cwd="/")
    assert check.returncode == 0, check.stderr
    assert check.stdout.startswith(str(agent_venv))
