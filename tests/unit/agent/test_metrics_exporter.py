"""The agent's metrics exporter: one-shot output (run as installed from the wheel), pressure events, atomic writes."""

import importlib
import json
import os
import socket
import subprocess
import sys
from pathlib import Path


REPO = Path(__file__).resolve().parents[3]
sys.path.insert(0, str(REPO / "tests" / "unit"))
from kernel_tree import write_tree  # noqa: E402

UNIT = "cpuinfer-llama-x.service"
GROUP = "/sys/fs/cgroup/cpuinfer-inference.slice/" + UNIT
PROMTOOL = REPO / ".build" / "tools" / "promtool"


def fake_host(root):
    write_tree(root, {
        GROUP + "/cgroup.procs": "77\n",
        GROUP + "/memory.pressure": "some avg10=1.00 avg60=0.50 avg300=0.10 total=900\n"
                                    "full avg10=0.00 avg60=0.00 avg300=0.00 total=10\n",
        GROUP + "/cpu.stat": "usage_usec 10\nnr_periods 0\nnr_throttled 0\nthrottled_usec 0\n",
        GROUP + "/memory.current": "4096\n",
        "/proc/77/task/77/schedstat": "1 2000 3\n",
        "/sys/devices/system/cpu/online": "0\n",
    })


def test_once_prints_metrics_promtool_accepts(tmp_path, agent_venv):
    fake_host(tmp_path / "root")
    config = tmp_path / "config.json"
    config.write_text(json.dumps({"root": str(tmp_path / "root"), "units": [{"unit": UNIT, "port": 1}],
                                  "textfile": str(tmp_path / "out.prom"), "interval_seconds": 1,
                                  "pressure_trigger": {"stall_us": 150000, "window_us": 1000000},
                                  "perf_counters": False, "probe": {"interval_seconds": 0, "tokens": 4}}))
    env = dict(os.environ)
    env.pop("PYTHONPATH", None)  # the helpers must come from the wheel
    out = subprocess.run([str(agent_venv / "bin" / "cpuinfer-metrics"), str(config), "--once"], env=env,
                         capture_output=True, text=True, check=True, timeout=30).stdout
    assert 'cpuinfer_unit_memory_current_bytes{unit="%s"} 4096.0' % UNIT in out
    assert 'cpuinfer_unit_perf_counters_available{reason="disabled (metrics_perf_counters)",unit="%s"} 0' % UNIT in out
    assert "cpuinfer_unit_memory_pressure_events_total" not in out  # no trigger in a one-shot run
    if PROMTOOL.exists():
        check = subprocess.run([str(PROMTOOL), "check", "metrics"], input=out, capture_output=True, text=True,
                               check=False)
        assert check.returncode == 0, check.stdout + check.stderr


def load():
    return importlib.import_module("cpuinfer_agent.metrics")


def test_pressure_events_are_counted(tmp_path, monkeypatch):
    exporter = load()
    fake_host(tmp_path)
    unit = exporter.Unit({"unit": UNIT})
    unit.group = GROUP[len("/sys/fs/cgroup/"):]
    # a trigger fd signals POLLPRI; out-of-band data on a socket does the same
    kernel_side, watched = socket.socketpair()
    unit.trigger_fd = watched.fileno()
    kernel_side.send(b"!", socket.MSG_OOB)
    exporter.wait_for_pressure(str(tmp_path), [unit], 0.2)
    assert unit.pressure_events >= 1
    kernel_side.close()
    watched.close()


def test_textfile_is_replaced_whole(tmp_path, monkeypatch):
    exporter = load()
    (tmp_path / "textfiles").mkdir()
    target = tmp_path / "textfiles" / "cpuinfer.prom"
    target.write_text("old\n")
    family = exporter.unit_metrics.Family("cpuinfer_unit_threads", "gauge", "Threads.")
    family.add({"unit": UNIT}, 3)
    monkeypatch.setattr("os.umask", lambda mask: 0o022)
    exporter.unit_metrics.write_textfile(str(target), [family])
    assert target.read_text() == ('# HELP cpuinfer_unit_threads Threads.\n# TYPE cpuinfer_unit_threads gauge\n'
                                  'cpuinfer_unit_threads{unit="%s"} 3.0\n' % UNIT)
    assert target.stat().st_mode & 0o044 == 0o044  # node_exporter (another user) reads it
    assert [p.name for p in target.parent.iterdir()] == ["cpuinfer.prom"]


LLAMA_SERVER_METRICS = """# HELP llamacpp:prompt_tokens_total Number of prompt tokens processed, excluding cached tokens
# TYPE llamacpp:prompt_tokens_total counter
llamacpp:prompt_tokens_total 42
# HELP llamacpp:requests_processing Number of requests processing
# TYPE llamacpp:requests_processing gauge
llamacpp:requests_processing 2
"""


def test_engine_metrics_are_scraped_renamed_and_labelled(tmp_path, monkeypatch):
    import http.server
    import threading

    class Metrics(http.server.BaseHTTPRequestHandler):
        def do_GET(self):  # noqa: N802 (http.server's name)
            authorised = self.headers.get("Authorization") == "Bearer k"
            self.send_response(200 if self.path == "/metrics" and authorised else 401)
            self.end_headers()
            self.wfile.write(LLAMA_SERVER_METRICS.encode() if authorised else b"")

        def log_message(self, *args):
            pass

    httpd = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Metrics)
    threading.Thread(target=httpd.serve_forever, daemon=True).start()
    exporter = load()
    fake_host(tmp_path)
    units = [exporter.Unit({"unit": UNIT, "port": httpd.server_address[1], "engine": "llama-server"}),
             exporter.Unit({"unit": "cpuinfer-llama-ik.service", "port": httpd.server_address[1], "engine": "ik_llama.cpp"}),
             exporter.Unit({"unit": "cpuinfer-llama-py.service", "port": 1, "engine": "llama-cpp-python"})]
    monkeypatch.setenv("CPUINFER_METRICS_API_KEY", "k")
    try:
        text = exporter.collect(str(tmp_path), units, exporter.unit_metrics.LatencyHistogram(), threading.Lock())
    finally:
        httpd.shutdown()
    assert 'cpuinfer_engine_prompt_tokens_total{unit="%s"} 42.0' % UNIT in text
    assert 'cpuinfer_engine_prompt_tokens_total{unit="cpuinfer-llama-ik.service"} 42.0' in text
    assert "# TYPE cpuinfer_engine_requests_processing gauge" in text
    assert "llamacpp:" not in text and "cpuinfer-llama-py" not in text.split("cpuinfer_engine")[-1]
    if PROMTOOL.exists():
        check = subprocess.run([str(PROMTOOL), "check", "metrics"], input=text, capture_output=True, text=True,
                               check=False)
        assert check.returncode == 0, check.stdout + check.stderr
