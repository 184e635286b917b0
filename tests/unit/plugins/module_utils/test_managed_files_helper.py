import pytest

from ansible_collections.cpuinfer.llm.plugins.module_utils import _managed_files
from ansible_collections.cpuinfer.llm.plugins.module_utils._runner import Refused


def _params(files=(), directories=()):
    def entry(raw, mode):
        return dict(dict(owner="root", group="root", mode=mode, content=None, secret_content=None), **raw)
    return {"files": [entry(f, "0644") for f in files], "directories": [entry(d, "0755") for d in directories]}


def test_missing_parents_come_first_then_directories_then_files(tmp_path):
    plan = _managed_files.plan(_params(files=[{"path": "/etc/a/b.conf", "content": "x\n"}],
                                       directories=[{"path": "/etc/d", "mode": "0700"}]), str(tmp_path))
    assert plan.changed_paths == ["/etc", "/etc/a", "/etc/d", "/etc/a/b.conf"]
    assert [step.describe for step in plan.steps] == ["write " + path for path in plan.changed_paths]
    assert list(plan.files) == ["/etc/a/b.conf"] and plan.files["/etc/a/b.conf"].content == "x\n"


def test_nothing_is_planned_where_the_tree_already_matches(tmp_path):
    params = _params(files=[{"path": "/etc/a.conf", "content": "x\n"}])
    for step in _managed_files.plan(params, str(tmp_path)).steps:
        step.do()
    again = _managed_files.plan(params, str(tmp_path))
    assert again.steps == [] and again.changed_paths == [] and list(again.files) == ["/etc/a.conf"]


def test_a_secret_shows_its_size_only_and_the_other_files_their_text(tmp_path):
    plan = _managed_files.plan(_params(files=[{"path": "/etc/a.key", "secret_content": "hunter2"},
                                              {"path": "/etc/a.conf", "content": "plain\n"}]), str(tmp_path))
    by_path = {diff["after_header"].split(" ")[0]: diff for diff in plan.diffs}
    assert by_path["/etc/a.key"]["after"] == "(secret: 7 bytes)\n" and "hunter2" not in str(plan.diffs)
    assert by_path["/etc/a.conf"]["after"] == "plain\n"
    assert plan.files["/etc/a.key"].content == "hunter2"


def test_every_problem_is_named_before_any_step(tmp_path):
    with pytest.raises(Refused) as refused:
        _managed_files.plan(_params(files=[{"path": "relative", "content": ""}, {"path": "/etc/x", "content": "", "mode": "rw"}]),
                            str(tmp_path))
    assert "absolute path" in str(refused.value) and "not octal" in str(refused.value)
    assert not (tmp_path / "etc").exists()
