import pytest

from ansible_collections.cpuinfer.llm.plugins.module_utils import _cgroup_plan as plan
from fake_cgroup import FakeCgroupKernel


@pytest.fixture
def host(tmp_path, monkeypatch):
    FakeCgroupKernel(tmp_path, cpus="0-3", nodes="0").install(monkeypatch)
    return plan.HostView(str(tmp_path))


def _build(host, **params):
    return plan.build(dict(dict.fromkeys(plan.CONTROLLER_OF), path="inference.slice", **params), host)


def test_a_valid_request_becomes_settings_and_controllers(host):
    settings, controllers, problems = _build(host, cpu_weight=500, cpu_max="max", memory_high="1G", memory_max="2G",
                                             cpuset_cpus="1-3", pids_max="max", io_weight={"default": 200})
    assert problems == []
    assert [(s.label, s.wanted) for s in settings] == [
        ("cpu.weight", "500"), ("cpu.max", ("max", None)), ("memory.high", str(1 << 30)), ("memory.max", str(2 << 30)),
        ("io.weight[default]", "200"), ("cpuset.cpus", "1-3"), ("pids.max", "max")]
    assert controllers == {"cpu", "memory", "cpuset", "io", "pids"}


def test_every_problem_is_listed_before_anything_is_written(host):
    dummy, dummy, problems = _build(host, cpu_weight=0, cpu_max="50 100", memory_high="512", memory_low="2G",
                                    memory_max="1G", cpuset_cpus="2-9", io_max={"9:9": {"rbps": 1}},
                                    io_weight={"default": 0}, pids_max="-1", procs=[1, 99999])
    text = "\n".join(problems)
    for expected in ("cpu_weight must be in 1..10000", "quota 50 is below 1000", "period 100 is outside",
                     "memory_high '512' is 512 bytes", "memory_low (2G) must not exceed memory_max (1G)",
                     "CPUs 4-9 not online", "'9:9' is not a block device", "io_weight[default] must be an integer",
                     "pids_max must be", "no process 99999", "PID 1 or kernel threads"):
        assert expected in text, expected


def test_a_bad_path_stops_planning_at_once(host):
    assert plan.build({"path": "/abs"}, host)[2] == ["path must be relative to the cgroup2 mount, not '/abs'"]


def test_an_unavailable_controller_is_named(tmp_path, monkeypatch):
    FakeCgroupKernel(tmp_path, controllers="cpu memory").install(monkeypatch)
    dummy, dummy, problems = _build(plan.HostView(str(tmp_path)), pids_max="10")
    assert problems == ["controllers not available on this host: pids"]


def test_io_max_in_the_kernels_form(host):
    settings, dummy, problems = _build(host, io_max={"8:0": {"rbps": "10M", "wiops": 100}})
    assert problems == [] and settings[0].line(settings[0].wanted) == "8:0 rbps=10485760 wbps=max riops=max wiops=100"
    assert "is 0: the kernel would stop all reads" in _build(host, io_max={"8:0": {"rbps": 0}})[2][0]


@pytest.mark.parametrize("filename, key, text, value", [
    ("cpuset.cpus", None, "3,1-2\n", "1-3"),
    ("cpuset.cpus.partition", None, "root invalid (cpus not exclusive)", "root"),
    ("io.weight", "8:0", "default 100\n8:0 200", "200"),
    ("io.weight", "8:1", "default 100", "default"),
    ("io.max", "8:0", "8:0 rbps=1 wbps=max", "rbps=1 wbps=max riops=max wiops=max"),
    ("memory.max", None, "max\n", "max"),
])
def test_what_the_kernel_shows_is_normalised(filename, key, text, value):
    assert plan.current_value(plan.Setting(filename, None, key), text) == value


def test_cpu_max_keeps_the_current_period():
    assert plan.resolve_wanted(plan.Setting("cpu.max", ("max", None)), "50000 200000") == "max 200000"
    assert plan.resolve_wanted(plan.Setting("cpu.max", ("max", None)), None) == "max 100000"
    assert plan.resolve_wanted(plan.Setting("cpu.max", ("20000", 100000)), "max 200000") == "20000 100000"
