"""What an operator sees: the .prom file node_exporter would read, pressure events, hardware counters."""

import os
import subprocess
import time

TEXTFILE = "/var/lib/prometheus/node-exporter/cpuinfer.prom"
LLAMA = "cpuinfer-llama-tiny-llama.service"
DEMO = "cpuinfer-pressure-demo.service"
PROMTOOL = os.path.join(os.environ["MOLECULE_PROJECT_DIRECTORY"], ".build", "tools", "promtool")
# what the VM produced, kept for people to look at (docs/observability.md quotes it)
EVIDENCE = os.path.join(os.environ["MOLECULE_PROJECT_DIRECTORY"], ".build", "observability")


def _keep(name, text):
    os.makedirs(EVIDENCE, exist_ok=True)
    with open(os.path.join(EVIDENCE, name), "w", encoding="utf-8") as handle:
        handle.write(text)


def _metrics(host):
    with host.sudo():
        return host.file(TEXTFILE).content_string


def _wait_for(host, needle, seconds=240):
    deadline = time.monotonic() + seconds
    while True:
        text = _metrics(host)
        if needle(text):
            return text
        assert time.monotonic() < deadline, "gave up waiting; last output:\n" + text
        time.sleep(5)


def _value(text, prefix):
    for line in text.splitlines():
        if line.startswith(prefix):
            return float(line.rsplit(" ", 1)[1])
    return None


def _agent_entry_point(argv):
    """The entry point a daemon's command line runs, when it is a venv interpreter of the host agent
    running a script of the same venv (/opt/cpuinfer/agent/<digest>/bin/{python3,cpuinfer-...})."""
    venv_bin = argv[0].rsplit("/", 1)[0]
    assert argv[0].startswith("/opt/cpuinfer/agent/") and argv[0].rsplit("/", 1)[1] in ("python", "python3"), argv
    assert argv[1].startswith(venv_bin + "/"), argv
    return argv[1][len(venv_bin) + 1:]


def test_exporter_runs_hardened(host):
    assert host.service("cpuinfer-metrics.service").is_running
    with host.sudo():
        pid = host.check_output("systemctl show --property MainPID --value cpuinfer-metrics.service")
        argv = host.file("/proc/%s/cmdline" % pid).content_string.split("\0")
    # the host agent's build: its venv's python running its entry point
    assert _agent_entry_point(argv) == "cpuinfer-metrics", argv
    with host.sudo():
        exposure = host.check_output("systemd-analyze security --no-pager cpuinfer-metrics.service | tail -1")
    # root (to own PSI trigger writes) with no capabilities but CAP_PERFMON; llama units score 1.0
    _keep("metrics-exposure.txt", exposure + "\n")
    assert float(exposure.split()[-3]) <= 6.0, exposure


def test_unit_metrics_are_there_and_promtool_accepts_them(host):
    text = _wait_for(host, lambda t: "cpuinfer_inter_token_latency_seconds_bucket" in t)
    for family in ("pressure_avg_ratio", "pressure_stalled_seconds_total", "cpu_usage_seconds_total",
                   "cpu_throttled_periods_total", "memory_current_bytes", "memory_events_total",
                   "run_delay_seconds", "threads"):
        assert 'cpuinfer_unit_%s{' % family in text and 'unit="%s"' % LLAMA in text, family
    assert _value(text, 'cpuinfer_unit_threads{unit="%s"}' % LLAMA) >= 2
    assert _value(text, 'cpuinfer_probe_tokens_per_second{unit="%s"}' % LLAMA) > 0
    # llama-server's own counters, scraped with the API key and renamed (no colons)
    assert (_value(text, 'cpuinfer_engine_tokens_predicted_total{unit="%s"}' % LLAMA) or 0) > 0
    assert "llamacpp:" not in text
    _keep("cpuinfer.prom", text)
    check = subprocess.run([PROMTOOL, "check", "metrics"], input=text, capture_output=True, text=True, check=False)
    assert check.returncode == 0, check.stdout + check.stderr


def test_missing_hardware_counters_are_reported_absent_with_the_reason(host):
    text = _metrics(host)
    line = next(l for l in text.splitlines() if l.startswith("cpuinfer_unit_perf_counters_available{") and LLAMA in l)
    assert float(line.rsplit(" ", 1)[1]) == 0 and 'reason="' in line and 'reason=""' not in line, line
    assert "cpuinfer_unit_instructions_total" not in text


def test_memory_pressure_trigger_fires_for_the_squeezed_unit(host):
    text = _wait_for(host, lambda t: (_value(t, 'cpuinfer_unit_memory_pressure_events_total{unit="%s"}' % DEMO) or 0) > 0)
    assert _value(text, 'cpuinfer_unit_memory_pressure_events_total{unit="%s"}' % DEMO) >= 1
    with host.sudo():
        journal = host.check_output("journalctl -u cpuinfer-metrics.service --no-pager -o cat")
    assert "memory pressure event on %s" % DEMO in journal
