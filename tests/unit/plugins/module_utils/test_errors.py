"""Every error a helper raises on purpose is a HostError, so _runner reports it as an answer
(its message) and not as a defect (a traceback)."""

import importlib
import inspect
from pathlib import Path

import pytest

from ansible_collections.cpuinfer.llm.plugins.module_utils._errors import HostError

HELPERS = sorted(p.stem for p in (Path(__file__).resolve().parents[4] / "plugins" / "module_utils").glob("_*.py")
                 if p.stem != "__init__")


def _error_classes(name):
    module = importlib.import_module("ansible_collections.cpuinfer.llm.plugins.module_utils." + name)
    return [cls for dummy, cls in inspect.getmembers(module, inspect.isclass)
            if cls.__module__ == module.__name__ and issubclass(cls, Exception) and cls.__name__.endswith("Error")]


def test_the_helpers_and_their_errors_are_found():
    assert "_sysctl" in HELPERS and "_errors" in HELPERS and len(HELPERS) > 10
    found = dict((name, [cls.__name__ for cls in _error_classes(name)]) for name in HELPERS)
    assert found["_sysctl"] == ["SysctlError"] and found["_cgroupfs"] == ["CgroupError"]


@pytest.mark.parametrize("name", HELPERS)
def test_each_helpers_own_errors_are_host_errors(name):
    for cls in _error_classes(name):
        assert issubclass(cls, HostError), "%s.%s is not a HostError" % (name, cls.__name__)


def test_a_host_error_carries_its_whole_message():
    assert str(HostError("cpu.max: the kernel refused 'max 0'")) == "cpu.max: the kernel refused 'max 0'"
