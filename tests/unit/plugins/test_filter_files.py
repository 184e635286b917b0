"""The filter files hold names only: ansible-core's loader compiles every one of them in each task's worker that
uses any of our filters, and none of the filters' code until a filter is called."""

import ast
import json
import subprocess
import sys
from pathlib import Path

import pytest

from ansible_collections.cpuinfer.llm.plugins.plugin_utils._lazy_filters import lazy_filters

REPO = Path(__file__).resolve().parents[3]
FILTER_FILES = sorted((REPO / "plugins" / "filter").glob("*.py"))
COLLECTIONS = REPO / ".build" / "collections"

# What ansible-core's Jinja2 loader does for one filter of the collection, in a fresh process (a task's worker):
# which of the filters' code files it imported, before and after the filter ran.
LOOKUP = r"""
import json, sys
from ansible.utils.collection_loader._collection_finder import _AnsibleCollectionFinder
_AnsibleCollectionFinder(paths=[sys.argv[1]])._install()
from ansible.plugins.loader import filter_loader
def code_files():
    return sorted(name.rsplit('.', 1)[1] for name in sys.modules if '.plugin_utils._filter_' in name)
units_running = filter_loader.get('cpuinfer.llm.units_running')
loaded = code_files()
result = units_running.j2_function({'a.service': {'active': 'active', 'file': 'enabled'}}, ['a.service'], enabled=['a.service'])
print(json.dumps({'loaded': loaded, 'called': code_files(), 'result': result}))
"""


def filters_of(path):
    """{filter: its deferred function} of a filter file, as its FilterModule gives them."""
    module = {}
    exec(compile(path.read_text(encoding="utf-8"), str(path), "exec"), module)  # pylint: disable=exec-used
    return module["FilterModule"]().filters()


def test_loading_the_filters_compiles_none_of_their_code_until_one_is_called():
    found = json.loads(subprocess.run([sys.executable, "-c", LOOKUP, str(COLLECTIONS)], capture_output=True, text=True,
                                      check=True).stdout)
    assert found == {"loaded": [], "called": ["_filter_units"], "result": True}


@pytest.mark.parametrize("path", FILTER_FILES, ids=[path.stem for path in FILTER_FILES])
def test_a_filter_file_is_names_only(path):
    tree = ast.parse(path.read_text(encoding="utf-8"))
    functions = [node.name for node in ast.walk(tree) if isinstance(node, ast.FunctionDef)]
    imports = [alias.name for node in ast.walk(tree) if isinstance(node, ast.ImportFrom) for alias in node.names]
    assert functions == ["filters"] and set(imports) <= {"absolute_import", "division", "print_function", "lazy_filters"}


@pytest.mark.parametrize("path", FILTER_FILES, ids=[path.stem for path in FILTER_FILES])
def test_each_filter_names_a_function_of_its_code_file_and_is_documented(path):
    code = __import__("ansible_collections.cpuinfer.llm.plugins.plugin_utils._filter_" + path.stem, fromlist=["_"])
    tree = ast.parse(path.read_text(encoding="utf-8"))
    call = next(node for node in ast.walk(tree) if isinstance(node, ast.Call) and getattr(node.func, "id", "") == "lazy_filters")
    assert call.args[0].value == "_filter_" + path.stem
    functions = [arg.value for arg in call.args[1:]] + [keyword.value.value for keyword in call.keywords]
    assert all(callable(getattr(code, function, None)) for function in functions)
    for name in filters_of(path):
        assert (path.parent / (name + ".yml")).is_file(), name


def test_every_documented_filter_is_in_a_filter_file():
    documented = set(path.stem for path in (REPO / "plugins" / "filter").glob("*.yml"))
    named = set(name for path in FILTER_FILES for name in filters_of(path))
    assert documented == named


def test_a_deferred_filter_calls_its_function_with_every_argument():
    filters = lazy_filters("_filter_units", "units_running")
    units = {"a.service": {"active": "active", "file": "disabled"}}
    assert filters["units_running"](units, ["a.service"]) is True
    assert filters["units_running"](units, ["a.service"], enabled=["a.service"]) is False
    assert filters["units_running"].__name__ == "units_running"


def test_a_renamed_filter_calls_the_function_it_names():
    filters = lazy_filters("_filter_units", other="units_running")
    assert list(filters) == ["other"] and filters["other"]({}, []) is True


def test_a_missing_function_fails_when_called_not_when_listed():
    filters = lazy_filters("_filter_units", "no_such_filter")
    with pytest.raises(AttributeError):
        filters["no_such_filter"]({})
