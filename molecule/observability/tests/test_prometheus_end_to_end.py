"""The real parts end to end: node_exporter on the VM serves the exporter's textfile and the units'
states, llama-server serves its own /metrics, and a Prometheus server scrapes both while the instance
streams; every dashboard query and every rule expression is then evaluated through Prometheus's HTTP
API, and an alert is driven to firing by real load.

The Prometheus server is Debian's (scripts/bootstrap unpacks it beside promtool) and runs on this
controller, where a fleet runs its Prometheus too: under software emulation the VM is for the host's
parts. The rules are the shipped file with every `for:` cut to 0s (the test watches minutes, not the
hours an SRE's clock counts); the expressions are the shipped ones."""

import json
import os
import re
import socket
import subprocess
import sys
import threading
import time
import urllib.parse
import urllib.request
from pathlib import Path

import pytest
import yaml

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "shared"))

from lab_vm import forwarded_ports  # noqa: E402  pylint: disable=wrong-import-position

REPO = os.environ["MOLECULE_PROJECT_DIRECTORY"]
PROMETHEUS = os.path.join(REPO, ".build", "tools", "prometheus")
RULES = os.path.join(REPO, "files", "prometheus", "cpuinfer.rules.yml")
DASHBOARD = os.path.join(REPO, "files", "grafana", "cpuinfer-dashboard.json")
EVIDENCE = os.path.join(REPO, ".build", "observability")
LLAMA = "cpuinfer-llama-tiny-llama.service"
API_KEY = "lab-secret-not-for-production"  # converge.yml's llama_server_api_key
NODE_EXPORTER_PORT, LLAMA_PORT, FRONT_DOOR_METRICS_PORT = "9100", "8081", "8405"
# dashboard queries that cannot answer in a lab VM, with the reason
ABSENT_IN_THE_LAB = {
    "cpuinfer_unit_llc_occupancy_bytes": "no RDT monitoring in a TCG VM (no resctrl)",
    "cpuinfer_unit_memory_bandwidth_bytes_total": "no RDT monitoring in a TCG VM (no resctrl)",
    "cpuinfer_unit_instructions_total": "no hardware counters under TCG (reported by perf_counters_available 0)",
    "cpuinfer_unit_cache_misses_total": "no hardware counters under TCG (reported by perf_counters_available 0)",
}
# rule expressions that cannot answer here, with the reason
RULE_SERIES_ELSEWHERE = {
    "cpuinfer_tuning_drift_settings": "written by verify.yml on the machine that runs it (molecule default checks it)",
    "cpuinfer_pull_": "written by cpuinfer-pull-run on hosts in pull mode (molecule pull reads them)",
}
COMPARISON = re.compile(r"\s*(==|!=|>=|<=|>|<)\s*[-+]?(\d+(\.\d+)?|Inf)\s*$")
SET_OPERATOR = re.compile(r"\s+(?:and|or|unless)(?:\s+on\s*\([^)]*\))?\s+")


def _scenario_vm():
    with open(os.path.join(os.environ["MOLECULE_SCENARIO_DIRECTORY"], "molecule.yml"), encoding="utf-8") as handle:
        name = yaml.safe_load(handle)["platforms"][0]["name"]
    return name, forwarded_ports(name)


def _free_port():
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def _get(url, data=None, headers=None):
    request = urllib.request.Request(url, data=data, headers=headers or {})
    with urllib.request.urlopen(request, timeout=60) as response:
        return json.loads(response.read())


def _write_config(directory, vm_name, forwarded):
    with open(RULES, encoding="utf-8") as handle:
        rules = yaml.safe_load(handle)
    for group in rules["groups"]:
        group["interval"] = "5s"
        for rule in group["rules"]:
            if "for" in rule:
                rule["for"] = "0s"
    with open(os.path.join(directory, "rules.yml"), "w", encoding="utf-8") as handle:
        yaml.safe_dump(rules, handle)
    config = {
        "global": {"scrape_interval": "5s", "evaluation_interval": "5s"},
        "rule_files": ["rules.yml"],
        "scrape_configs": [
            {"job_name": "node", "static_configs": [
                {"targets": ["127.0.0.1:%s" % forwarded[NODE_EXPORTER_PORT]], "labels": {"instance": vm_name}}]},
            {"job_name": "llama-server", "authorization": {"credentials": API_KEY}, "static_configs": [
                {"targets": ["127.0.0.1:%s" % forwarded[LLAMA_PORT]], "labels": {"instance": vm_name, "unit": LLAMA}}]},
            {"job_name": "frontdoor", "static_configs": [
                {"targets": ["127.0.0.1:%s" % forwarded[FRONT_DOOR_METRICS_PORT]], "labels": {"instance": vm_name}}]},
        ],
    }
    with open(os.path.join(directory, "prometheus.yml"), "w", encoding="utf-8") as handle:
        yaml.safe_dump(config, handle)


def _load(url, stop):
    """Completions one after another: the instance's CPU quota throttles it while it decodes."""
    body = json.dumps({"prompt": "The lab", "n_predict": 16, "stream": False}).encode()
    while not stop.is_set():
        try:
            _get(url, body, {"Content-Type": "application/json", "Authorization": "Bearer " + API_KEY})
        except OSError:
            time.sleep(1)


@pytest.fixture(scope="module")
def prometheus(tmp_path_factory):
    directory = str(tmp_path_factory.mktemp("prometheus"))
    vm_name, forwarded = _scenario_vm()
    _write_config(directory, vm_name, forwarded)
    port = _free_port()
    log_path = os.path.join(directory, "log")
    with open(log_path, "w", encoding="utf-8") as log:
        server = subprocess.Popen(
            [PROMETHEUS, "--config.file=prometheus.yml", "--storage.tsdb.path=data",
             "--web.listen-address=127.0.0.1:%d" % port, "--log.level=warn"],
            cwd=directory, stdout=subprocess.DEVNULL, stderr=log)
    stop = threading.Event()
    load = threading.Thread(target=_load, args=("http://127.0.0.1:%s/completion" % forwarded[LLAMA_PORT], stop), daemon=True)
    load.start()
    api = "http://127.0.0.1:%d/api/v1/" % port
    try:
        deadline = time.monotonic() + 60
        while True:
            try:
                if _get(api + "status/runtimeinfo")["status"] == "success":
                    break
            except OSError:
                pass
            assert time.monotonic() < deadline and server.poll() is None, Path(log_path).read_text(encoding="utf-8")
            time.sleep(1)
        yield {"api": api, "vm": vm_name, "stop_load": stop}
    finally:
        stop.set()
        server.terminate()
        server.wait(timeout=30)


def query(prometheus, expr):
    answer = _get(prometheus["api"] + "query?" + urllib.parse.urlencode({"query": expr}))
    assert answer["status"] == "success", (expr, answer)
    return answer["data"]["result"]


def wait_for(prometheus, expr, seconds=300):
    deadline = time.monotonic() + seconds
    while True:
        result = query(prometheus, expr)
        if result:
            return result
        assert time.monotonic() < deadline, "no series for %s after %d s" % (expr, seconds)
        time.sleep(5)


def keep(name, text):
    os.makedirs(EVIDENCE, exist_ok=True)
    with open(os.path.join(EVIDENCE, name), "w", encoding="utf-8") as handle:
        handle.write(text)


def test_node_exporter_runs_with_the_roles_flags(host):
    assert host.service("prometheus-node-exporter.service").is_running
    pid = host.check_output("systemctl show --property MainPID --value prometheus-node-exporter.service")
    with host.sudo():
        argv = host.file("/proc/%s/cmdline" % pid).content_string.split("\0")
    assert "--collector.textfile.directory=/var/lib/prometheus/node-exporter" in argv, argv
    assert "--collector.systemd" in argv, argv


def test_every_target_is_scraped(prometheus):
    # every target up, each in three scrapes at least (a query answers as soon as one target does)
    wait_for(prometheus, 'count(up == 1 and on (job, instance) count_over_time(up[1m]) >= 3) == 3')
    up = query(prometheus, "up == 1")
    assert sorted(series["metric"]["job"] for series in up) == ["frontdoor", "llama-server", "node"], up
    # the front door's one backend has the instance up behind it
    assert wait_for(prometheus, 'haproxy_backend_active_servers{proxy="tiny-llama"} == 1')
    # the engine's own /metrics beside the textfile: llama.cpp's names, scraped with the API key
    assert wait_for(prometheus, 'llamacpp:tokens_predicted_total{unit="%s"} > 0' % LLAMA)
    assert wait_for(prometheus, 'node_systemd_unit_state{name="%s", state="active"} == 1' % LLAMA)
    assert wait_for(prometheus, 'node_textfile_mtime_seconds{file=~".*cpuinfer[.]prom"}')


def dashboard_queries():
    with open(DASHBOARD, encoding="utf-8") as handle:
        panels = json.load(handle)["panels"]
    for panel in panels:
        for target in panel["targets"]:
            expr = target["expr"].replace("$__rate_interval", "1m").replace('"$instance"', '".*"')
            yield panel["title"], expr.replace('"$unit"', '".*"')


def test_every_dashboard_query_answers(prometheus):
    wait_for(prometheus, "count_over_time(cpuinfer_unit_cpu_usage_seconds_total[1m]) >= 3")
    wait_for(prometheus, "cpuinfer_slo_controller_lc_p99_seconds")
    lines, silent = [], []
    for title, expr in dashboard_queries():
        count = len(query(prometheus, expr))
        absent = [reason for metric, reason in ABSENT_IN_THE_LAB.items() if metric in expr]
        lines.append("%3d  %s  |  %s%s" % (count, title, expr, "  (expected none: %s)" % absent[0] if absent else ""))
        if absent:
            assert count == 0, (expr, "answers now: take it off ABSENT_IN_THE_LAB")
        elif count == 0:
            silent.append(expr)
    keep("dashboard-queries.txt", "\n".join(lines) + "\n")
    assert not silent, silent


def rule_parts(expr):
    """The series an alert's condition is made of: each side of and/or/unless, less its threshold
    (a healthy host answers `x == 0` with nothing, yet x must exist)."""
    return [COMPARISON.sub("", part) for part in SET_OPERATOR.split(" ".join(expr.split()))]


def test_every_rule_expression_answers(prometheus):
    with open(RULES, encoding="utf-8") as handle:
        rules = [rule for group in yaml.safe_load(handle)["groups"] for rule in group["rules"]]
    lines, silent = [], []
    for rule in rules:
        name = rule.get("record") or rule["alert"]
        exprs = [name] if "record" in rule else rule_parts(rule["expr"])
        for expr in exprs:
            elsewhere = [reason for metric, reason in RULE_SERIES_ELSEWHERE.items() if metric in expr]
            if elsewhere:
                lines.append("  -  %s  |  %s  (not here: %s)" % (name, expr, elsewhere[0]))
                continue
            count = len(wait_for(prometheus, expr, seconds=120) if "record" in rule else query(prometheus, expr))
            lines.append("%3d  %s  |  %s" % (count, name, expr))
            if count == 0:
                silent.append((name, expr))
    keep("rule-expressions.txt", "\n".join(lines) + "\n")
    assert not silent, silent


# a unit under a 20 % quota running a CPU burner (prepare.yml): the inference instance has no quota
THROTTLED = "cpuinfer-throttle-demo.service"


def test_cpu_throttling_alert_fires_under_load(prometheus):
    deadline = time.monotonic() + 300
    while True:
        alerts = _get(prometheus["api"] + "alerts")["data"]["alerts"]
        firing = [a for a in alerts if a["state"] == "firing"]
        throttled = [a for a in firing if a["labels"]["alertname"] == "CpuinferCpuThrottled" and a["labels"]["unit"] == THROTTLED]
        if throttled:
            break
        assert time.monotonic() < deadline, "CpuinferCpuThrottled did not fire within 300 s: %s" % alerts
        time.sleep(5)
    keep("alerts-firing.json", json.dumps(firing, indent=1) + "\n")
    assert throttled[0]["labels"]["severity"] == "ticket" and throttled[0]["labels"]["instance"] == prometheus["vm"]
    assert float(throttled[0]["value"]) > 0.25
