"""What keeps every module on the one undo path and the one number reader (see _runner, _decimal)."""

import ast
import inspect
import re
from pathlib import Path

import pytest

from ansible_collections.cpuinfer.llm.plugins.module_utils import _errors

PLUGINS = Path(__file__).resolve().parents[3] / "plugins"
MODULES = sorted((PLUGINS / "modules").glob("*.py"))
PYTHON = sorted(PLUGINS.rglob("*.py"))


def _calls(tree):
    return [node for node in ast.walk(tree) if isinstance(node, ast.Call)]


def _name(call):
    func = call.func
    return func.attr if isinstance(func, ast.Attribute) else getattr(func, "id", None)


@pytest.mark.parametrize("path", MODULES, ids=lambda p: p.stem)
def test_main_only_hands_the_spec_and_body_to_the_runner(path):
    tree = ast.parse(path.read_text())
    main = next(node for node in tree.body if isinstance(node, ast.FunctionDef) and node.name == "main")
    calls = _calls(main)
    assert [_name(call) for call in calls] == ["run_module"], path.name
    assert [arg.id for arg in calls[0].args][0] == "ARGUMENT_SPEC", path.name


@pytest.mark.parametrize("path", PYTHON, ids=lambda p: str(p.relative_to(PLUGINS)))
def test_nothing_ends_a_run_but_the_runner(path):
    if path.name == "_runner.py":
        return
    names = {_name(call) for call in _calls(ast.parse(path.read_text()))}
    assert not names & {"fail_json", "exit_json", "print", "exit"}, path


@pytest.mark.parametrize("path", PYTHON, ids=lambda p: str(p.relative_to(PLUGINS)))
def test_numbers_are_read_as_ascii_digits_only(path):
    if path.name == "_decimal.py":
        return
    text = path.read_text()
    assert ".isdigit(" not in text and ".isnumeric(" not in text and ".isdecimal(" not in text, path
    assert not re.search(r"\\d", text), "%s: \\d matches digits of every script; use [0-9]" % path


def test_every_helper_error_is_a_host_error():
    from ansible_collections.cpuinfer.llm.plugins.module_utils import (  # noqa: F401  (imported to be inspected)
        _cgroupfs, _cpulist, _knobs, _perf, _persist, _resctrl, _sched, _sizes, _sysctl, _thp, _topology)
    errors = [obj for module in (_cgroupfs, _cpulist, _knobs, _perf, _persist, _resctrl, _sched, _sizes, _sysctl,
                                 _thp, _topology)
              for obj in vars(module).values() if inspect.isclass(obj) and issubclass(obj, Exception)
              and obj.__module__ == module.__name__]
    assert len(errors) >= 11
    assert all(issubclass(error, _errors.HostError) for error in errors), errors


@pytest.mark.parametrize("path", MODULES, ids=lambda p: p.stem)
def test_documentation_parses_and_names_every_option(path):
    import importlib

    import yaml

    module = importlib.import_module("ansible_collections.cpuinfer.llm.plugins.modules." + path.stem)
    documented = yaml.safe_load(module.DOCUMENTATION)
    yaml.safe_load(module.EXAMPLES)
    yaml.safe_load(module.RETURN)
    fragment_options = set()
    for fragment in documented.get("extends_documentation_fragment") or []:
        # cpuinfer.llm.NAME is the fragment's DOCUMENTATION, cpuinfer.llm.NAME.PART its PART attribute
        name, part = (fragment.split(".")[2:] + ["documentation"])[:2]
        doc = importlib.import_module("ansible_collections.cpuinfer.llm.plugins.doc_fragments." + name).ModuleDocFragment
        fragment_options.update(yaml.safe_load(getattr(doc, part.upper())).get("options") or {})
    assert set(module.ARGUMENT_SPEC) == set(documented.get("options") or {}) | fragment_options
