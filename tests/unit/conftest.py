"""Shared fixtures: the collection importable by its FQCN, modules run in-process, fake trees."""

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
COLLECTIONS = REPO / ".build" / "collections"
_LINK = COLLECTIONS / "ansible_collections" / "cpuinfer" / "llm"
if not _LINK.exists():
    _LINK.parent.mkdir(parents=True, exist_ok=True)
    os.symlink(REPO, _LINK)
sys.path.insert(0, str(COLLECTIONS))
sys.path.insert(0, str(REPO / "agent"))  # the host agent's package, for in-process tests

from ansible.module_utils import basic  # noqa: E402  (after the path is set)
from ansible.module_utils.common.parameters import remove_values  # noqa: E402
from ansible.module_utils.testing import patch_module_args  # noqa: E402


class ModuleExit(Exception):
    def __init__(self, result):
        super().__init__(result)
        self.result = result


class ModuleFail(ModuleExit):
    pass


@pytest.fixture
def run_module(monkeypatch):
    """run_module(module, args, check=False, diff=False) -> (failed, result)."""

    warnings = []

    # as the real ones do, values of no_log options are masked wherever they occur in the result
    def exit_json(self, **kwargs):
        kwargs.setdefault("changed", False)
        kwargs["warnings"] = list(warnings)
        raise ModuleExit(json.loads(json.dumps(remove_values(kwargs, self.no_log_values))))

    def fail_json(self, msg, **kwargs):
        kwargs["msg"] = msg
        raise ModuleFail(json.loads(json.dumps(remove_values(kwargs, self.no_log_values))))

    monkeypatch.setattr(basic.AnsibleModule, "warn", lambda self, message: warnings.append(message))

    monkeypatch.setattr(basic.AnsibleModule, "exit_json", exit_json)
    monkeypatch.setattr(basic.AnsibleModule, "fail_json", fail_json)

    def run(module, args, check=False, diff=False):
        full = dict(args, _ansible_check_mode=check, _ansible_diff=diff)
        warnings.clear()
        with patch_module_args(full):
            try:
                module.main()
            except ModuleFail as failure:
                return True, failure.result
            except ModuleExit as done:
                return False, done.result
        raise AssertionError("module returned without exit_json or fail_json")

    return run


@pytest.fixture(scope="session")
def agent_deps(tmp_path_factory):
    """One directory of the agent's dependency wheels for the session (one pip download)."""
    return str(tmp_path_factory.mktemp("agent-deps"))


@pytest.fixture(scope="session")
def agent_venv(tmp_path_factory, agent_deps):
    """The host agent as a host gets it (the host_agent role's one step): the bundle the host_agent_wheel
    lookup builds, run by this Python as `python3 BUNDLE VENV DIGEST`, which makes a venv without pip and puts
    the agent's and its dependency's wheels in with installer, nothing else (no collection on its path);
    bin/ holds the entry points."""
    from ansible_collections.cpuinfer.llm.plugins.lookup.host_agent_wheel import agent_wheel

    wheel = agent_wheel(str(tmp_path_factory.mktemp("wheels")), deps=agent_deps)
    venv = tmp_path_factory.mktemp("agent") / wheel["digest"]
    subprocess.run([sys.executable, wheel["bundle"], str(venv), wheel["digest"]], check=True, env=dict(os.environ, PYTHONPATH=""))
    return venv


@pytest.fixture
def systemd(monkeypatch):
    """A FakeSystemd answering the modules' systemctl runs, with a test tree taken for the host's root."""
    from ansible_collections.cpuinfer.llm.plugins.module_utils import _systemd_units
    from fake_systemd import FakeSystemd

    fake = FakeSystemd()
    monkeypatch.setattr(basic.AnsibleModule, "run_command", lambda self, argv, **kwargs: fake(argv))
    monkeypatch.setattr(_systemd_units, "drives_systemd", lambda root: True)
    return fake
