"""Per-unit metrics read from a fake tree and rendered in the Prometheus text format."""

import os
import struct
import subprocess
from pathlib import Path

import pytest

from ansible_collections.cpuinfer.llm.plugins.module_utils import _perf
from cpuinfer_agent import unit_metrics as _metrics
from kernel_tree import write_tree

UNIT = "cpuinfer-llama-bench.service"
GROUP = "/sys/fs/cgroup/cpuinfer-inference.slice/" + UNIT
PROMTOOL = Path(__file__).resolve().parents[3] / ".build" / "tools" / "promtool"
ENGINE_CAPTURE = Path(__file__).resolve().parents[1] / "data" / "llama_server_metrics.txt"  # a real llama-server scrape


def unit_tree(root, memory_max="536870912"):
    write_tree(root, {
        GROUP + "/cgroup.procs": "4242\n",
        GROUP + "/cpu.pressure": "some avg10=12.50 avg60=3.00 avg300=1.00 total=2500000\n"
                                 "full avg10=0.00 avg60=0.00 avg300=0.00 total=0\n",
        GROUP + "/memory.pressure": "some avg10=0.00 avg60=0.00 avg300=0.00 total=150\n"
                                    "full avg10=0.00 avg60=0.00 avg300=0.00 total=100\n",
        GROUP + "/cpu.stat": "usage_usec 3000000\nuser_usec 2000000\nsystem_usec 1000000\nnr_periods 40\n"
                             "nr_throttled 7\nthrottled_usec 350000\n",
        GROUP + "/memory.current": "104857600\n",
        GROUP + "/memory.high": "max\n",
        GROUP + "/memory.max": memory_max + "\n",
        GROUP + "/memory.events": "low 0\nhigh 3\nmax 1\noom 0\noom_kill 0\noom_group_kill 0\n",
        "/proc/4242/task/4242/schedstat": "900000000 250000000 120\n",
        "/proc/4242/task/4243/schedstat": "500000000 50000000 80\n",
        "/sys/fs/resctrl/inference/mon_data/mon_L3_00/llc_occupancy": "1048576\n",
        "/sys/fs/resctrl/inference/mon_data/mon_L3_00/mbm_total_bytes": "7000\n",
        "/sys/fs/resctrl/inference/mon_data/mon_L3_01/llc_occupancy": "1048576\n",
        "/sys/fs/resctrl/inference/mon_data/mon_L3_01/mbm_total_bytes": "Unavailable\n",
    })


def parse(text):
    """The exposition text -> {(name, frozenset(labels)): value}; asserts HELP/TYPE precede samples."""
    samples, typed = {}, set()
    for line in text.splitlines():
        if line.startswith("# TYPE "):
            typed.add(line.split()[2])
            continue
        if line.startswith("#"):
            continue
        name_labels, value = line.rsplit(" ", 1)
        name, dummy_brace, labels = name_labels.partition("{")
        assert any(name == t or name.startswith(t + "_") for t in typed), name
        pairs = frozenset(tuple(p.split("=", 1)) for p in labels.rstrip("}").split(",")) if labels else frozenset()
        samples[(name, frozenset((k, v.strip('"')) for k, v in pairs))] = float(value)
    return samples


def labels(**kwargs):
    return frozenset(dict(unit=UNIT, **kwargs).items())


def test_unit_readings_in_base_units(tmp_path):
    unit_tree(tmp_path)
    metrics = _metrics.UnitMetrics()
    assert metrics.collect(str(tmp_path), UNIT, resctrl_group="inference", perf=(None, "no counters"),
                           pressure_events=2)
    got = parse(_metrics.render(metrics.families()))
    p = "cpuinfer_unit_"
    assert got[(p + "pressure_avg_ratio", labels(resource="cpu", kind="some", window="10s"))] == 0.125
    assert got[(p + "pressure_stalled_seconds_total", labels(resource="cpu", kind="some"))] == 2.5
    assert got[(p + "cpu_usage_seconds_total", labels())] == 3.0
    assert got[(p + "cpu_throttled_periods_total", labels())] == 7
    assert got[(p + "cpu_throttled_seconds_total", labels())] == 0.35
    assert got[(p + "memory_high_bytes", labels())] == float("inf")
    assert got[(p + "memory_max_bytes", labels())] == 536870912
    assert got[(p + "memory_events_total", labels(event="high"))] == 3
    assert got[(p + "run_delay_seconds", labels())] == 0.3
    assert got[(p + "threads", labels())] == 2
    assert got[(p + "llc_occupancy_bytes", labels())] == 2097152
    assert got[(p + "memory_bandwidth_bytes_total", labels(scope="total"))] == 7000
    assert got[(p + "perf_counters_available", labels(reason="no counters"))] == 0
    assert got[(p + "memory_pressure_events_total", labels())] == 2
    assert not any(name == p + "instructions_total" for name, dummy_labels in got)


def test_a_unit_without_a_cgroup_is_skipped(tmp_path):
    unit_tree(tmp_path)
    metrics = _metrics.UnitMetrics()
    assert not metrics.collect(str(tmp_path), "cpuinfer-llama-gone.service")
    assert _metrics.render(metrics.families()) == ""


def test_histogram_is_cumulative():
    histogram = _metrics.LatencyHistogram(buckets=(0.1, 1.0))
    histogram.observe(UNIT, [0.05, 0.5, 0.5, 3.0], 2.0)
    got = parse(_metrics.render(histogram.families()))
    name = "cpuinfer_inter_token_latency_seconds"
    assert got[(name + "_bucket", labels(le="0.1"))] == 1
    assert got[(name + "_bucket", labels(le="1.0"))] == 3
    assert got[(name + "_bucket", labels(le="+Inf"))] == 4
    assert got[(name + "_count", labels())] == 4
    assert got[(name + "_sum", labels())] == pytest.approx(4.05)


def test_engine_counters_without_total_become_gauges():
    # llama-server types its high-water mark n_tokens_max as a counter; promtool wants counters named *_total
    engine = _metrics.engine_families({}, UNIT, ENGINE_CAPTURE.read_text(encoding="utf-8"))
    assert engine["cpuinfer_engine_n_tokens_max"].kind == "gauge"
    assert engine["cpuinfer_engine_prompt_tokens_total"].kind == "counter"
    assert all(f.full_name.endswith("_total") for f in engine.values() if f.kind == "counter")


def test_label_values_are_escaped():
    family = _metrics.Family("x_total", "counter", "h")
    family.add({"reason": 'say "no"\nnow'}, 1)
    assert 'reason="say \\"no\\"\\nnow"' in _metrics.render([family])


@pytest.mark.skipif(not PROMTOOL.exists(), reason="scripts/bootstrap puts promtool in .build/tools")
def test_promtool_accepts_the_output(tmp_path):
    unit_tree(tmp_path)
    metrics = _metrics.UnitMetrics()
    metrics.collect(str(tmp_path), UNIT, resctrl_group="inference", perf=({"instructions": 5, "cache_misses": 1}, ""),
                    pressure_events=0)
    histogram = _metrics.LatencyHistogram()
    histogram.observe(UNIT, [0.02, 0.03], 40.0)
    engine = _metrics.engine_families({}, UNIT, ENGINE_CAPTURE.read_text(encoding="utf-8"))
    text = _metrics.render(metrics.families() + histogram.families() + list(engine.values()))
    result = subprocess.run([str(PROMTOOL), "check", "metrics"], input=text, capture_output=True, text=True,
                            check=False)
    assert result.returncode == 0, result.stdout + result.stderr


def test_perf_counters_sum_over_cpus(tmp_path):
    write_tree(tmp_path, {"/sys/devices/system/cpu/online": "0-1\n", GROUP + "/cgroup.procs": ""})
    counts = {("instructions", 0): 100, ("instructions", 1): 50, ("cache_misses", 0): 3, ("cache_misses", 1): 4}

    def fake_open(event, group_fd, cpu):
        assert os.path.samefile("/proc/self/fd/%d" % group_fd, str(tmp_path) + GROUP)
        path = tmp_path / ("%s-%d" % (event, cpu))
        path.write_bytes(struct.pack("=Q", counts[(event, cpu)]))
        return os.open(str(path), os.O_RDONLY)

    counters = _perf.CgroupCounters(str(tmp_path), GROUP[len("/sys/fs/cgroup/"):], open_event=fake_open).open()
    assert counters.read() == {"instructions": 150, "cache_misses": 7}
    counters.close()


def test_perf_refusal_gives_the_reason_and_closes_what_opened(tmp_path):
    write_tree(tmp_path, {"/sys/devices/system/cpu/online": "0-1\n", GROUP + "/cgroup.procs": ""})
    opened = []

    def refusing_open(event, group_fd, cpu):
        if cpu == 1:
            raise OSError(13, "Permission denied")
        opened.append(os.open(os.devnull, os.O_RDONLY))
        return opened[-1]

    with pytest.raises(_perf.PerfError, match="CAP_PERFMON"):
        _perf.CgroupCounters(str(tmp_path), GROUP[len("/sys/fs/cgroup/"):], open_event=refusing_open).open()
    for fd in opened:
        with pytest.raises(OSError):
            os.fstat(fd)
