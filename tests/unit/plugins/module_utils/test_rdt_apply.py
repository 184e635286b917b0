import pytest

from ansible_collections.cpuinfer.llm.plugins.module_utils import _resctrl
from ansible_collections.cpuinfer.llm.plugins.module_utils._rdt_apply import ResctrlWriter
from ansible_collections.cpuinfer.llm.plugins.module_utils._runner import Journal, StepFailed
from fake_resctrl import intel_xeon
from kernel_tree import snapshot

NEW = {"exists": False, "current": {"schemata": {}, "cpus": "", "tasks": []}}


@pytest.fixture
def xeon(tmp_path, monkeypatch):
    return intel_xeon(tmp_path).install(monkeypatch)


def test_a_new_group_with_schemata_cpus_tasks_and_a_monitor(tmp_path, xeon):
    root = str(tmp_path)
    before = snapshot(tmp_path)
    steps = ResctrlWriter(root).plan("inference", False, {"L3": {"0": "f", "1": "f"}}, NEW["current"], "2-3",
                                     [4242], {"llama": [4242]})
    assert [s.describe for s in steps] == ["create group inference", "schemata L3:0=f;1=f", "cpus_list 2-3",
                                           "task 4242", "create monitor group inference/mon_groups/llama",
                                           "watch task 4242 in inference/mon_groups/llama"]
    journal = Journal()
    journal.apply(steps)
    state = _resctrl.read_group(root, "inference")
    assert state["schemata"]["L3"] == {"0": "00f", "1": "00f"} and state["cpus"] == "2-3" and state["tasks"] == [4242]
    assert journal.rollback() == []
    assert _resctrl.groups(root) == [] and 4242 in _resctrl.read_group(root, "")["tasks"]
    assert set(snapshot(tmp_path)) == set(before)


def test_what_already_holds_is_not_planned(tmp_path, xeon):
    root = str(tmp_path)
    Journal().apply(ResctrlWriter(root).plan("inference", False, {"L3": {"0": "f", "1": "f"}}, NEW["current"], None, [], {}))
    current = _resctrl.read_group(root, "inference")
    assert ResctrlWriter(root).plan("inference", True, {"L3": {"0": "0f", "1": "00f"}}, current, None, [], {}) == []


def test_a_refusal_in_last_cmd_status_is_reported_and_undone(tmp_path, xeon):
    root = str(tmp_path)
    xeon.refuse = ("L3:0=3", "mask 3 overlaps an exclusive group")
    steps = ResctrlWriter(root).plan("inference", False, {"L3": {"0": "3", "1": "f"}}, NEW["current"], None, [], {})
    journal = Journal()
    with pytest.raises(StepFailed, match="last_cmd_status: mask 3 overlaps an exclusive group"):
        journal.apply(steps)
    journal.rollback()
    assert _resctrl.groups(root) == []


def test_removing_a_group_moves_its_tasks_back(tmp_path, xeon):
    root = str(tmp_path)
    writer = ResctrlWriter(root)
    Journal().apply(writer.plan("inference", False, {}, NEW["current"], None, [4242], {}))
    Journal().apply([writer.remove_step("inference")])
    assert _resctrl.groups(root) == [] and 4242 in _resctrl.read_group(root, "")["tasks"]
