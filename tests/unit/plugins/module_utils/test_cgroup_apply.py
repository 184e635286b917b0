import pytest

from ansible_collections.cpuinfer.llm.plugins.module_utils import _cgroup_apply as apply, _cgroupfs
from ansible_collections.cpuinfer.llm.plugins.module_utils._cgroup_plan import Setting
from ansible_collections.cpuinfer.llm.plugins.module_utils._runner import Journal, StepFailed
from fake_cgroup import FakeCgroupKernel
from kernel_tree import snapshot


@pytest.fixture
def kernel(tmp_path, monkeypatch):
    return FakeCgroupKernel(tmp_path, cpus="0-3").install(monkeypatch)


def test_steps_do_and_undo_as_one_journal(tmp_path, kernel):
    root = str(tmp_path)
    before = snapshot(tmp_path)
    journal = Journal()
    journal.apply([apply.enable_controller(root, "", "cpu"), apply.make_group(root, "inference.slice"),
                   apply.set_value(root, "inference.slice", Setting("cpu.weight", "500"), "500", None)])
    assert _cgroupfs.read_file(root, "inference.slice", "cpu.weight") == "500"
    assert "cpu" in _cgroupfs.subtree_control(root, "")
    assert journal.rollback() == []
    assert snapshot(tmp_path) == before


def test_a_value_written_over_an_existing_one_is_put_back(tmp_path, kernel):
    root = str(tmp_path)
    kernel.delegated_unit("app.slice", pids=())
    journal = Journal()
    journal.apply([apply.set_value(root, "app.slice", Setting("cpu.max", None), "20000 100000", "max 100000")])
    assert _cgroupfs.read_file(root, "app.slice", "cpu.max") == "20000 100000"
    journal.rollback()
    assert _cgroupfs.read_file(root, "app.slice", "cpu.max") == "max 100000"


def test_a_partition_the_kernel_calls_invalid_is_undone_and_refused(tmp_path, kernel, monkeypatch):
    root = str(tmp_path)
    kernel.delegated_unit("part.slice", pids=())
    written = []

    def kernel_says_invalid(root_, relative, value):
        written.append(value)
        shown = "root invalid (Cpu list in cpuset.cpus not exclusive)" if value == "root" else value
        (tmp_path / relative.lstrip("/")).write_text(shown)
    monkeypatch.setattr(apply._knobs, "write_knob", kernel_says_invalid)
    step = apply.set_value(root, "part.slice", Setting("cpuset.cpus.partition", "root"), "root", "member")
    with pytest.raises(StepFailed, match="refused partition 'root' for part.slice: root invalid"):
        Journal().apply([step])
    assert written == ["root", "member"]


def test_moving_a_process_goes_back_to_its_origin(tmp_path, kernel):
    root = str(tmp_path)
    kernel.delegated_unit("a.slice", pids=(10,))
    kernel.delegated_unit("b.slice", pids=())
    journal = Journal()
    journal.apply([apply.move_process(root, "b.slice", 10, "a.slice")])
    assert _cgroupfs.procs(root, "b.slice") == [10]
    journal.rollback()
    assert _cgroupfs.procs(root, "a.slice") == [10] and _cgroupfs.procs(root, "b.slice") == []


def test_a_refused_write_names_the_step(tmp_path, kernel):
    kernel.refuse["sys/fs/cgroup/cgroup.subtree_control"] = "Device or resource busy"
    with pytest.raises(StepFailed, match="enable cpu in the root: cannot write"):
        Journal().apply([apply.enable_controller(str(tmp_path), "", "cpu")])
