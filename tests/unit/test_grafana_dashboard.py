"""The shipped Grafana dashboard: importable shape, datasource as a variable, queries that parse and
name only metrics the collection's exporter and governor really write."""

import importlib
import json
import re
import subprocess
from pathlib import Path

import pytest
import yaml

from cpuinfer_agent import unit_metrics as _metrics

REPO = Path(__file__).resolve().parents[2]
DASHBOARD = json.loads((REPO / "files" / "grafana" / "cpuinfer-dashboard.json").read_text())
PROMTOOL = REPO / ".build" / "tools" / "promtool"
PROMQL_FUNCTIONS = {"rate", "increase", "deriv", "histogram_quantile", "sum", "by", "le", "Inf"}
# HAProxy 2.6's own exporter (role frontdoor, frontdoor_metrics_port): not ours to emit, so named here;
# molecule observability scrapes a real front door and checks every query that reads them answers.
FRONT_DOOR_METRICS = {"haproxy_backend_current_queue", "haproxy_backend_queue_time_average_seconds",
                      "haproxy_server_current_sessions", "haproxy_backend_active_servers", "haproxy_server_status"}


def targets():
    return [target for panel in DASHBOARD["panels"] for target in panel["targets"]]


def emitted_names(tmp_path):
    """Family names (and histogram series) that the exporter and the SLO controller write."""
    names = set()
    engine = _metrics.engine_families({}, "u.service", (REPO / "tests" / "unit" / "data" / "llama_server_metrics.txt").read_text())
    for family in _metrics.UnitMetrics().families() + _metrics.LatencyHistogram().families() + list(engine.values()):
        names.add(family.full_name)
        if family.kind == "histogram":
            names.update(family.full_name + suffix for suffix in ("_bucket", "_sum", "_count"))
    controller = importlib.import_module("cpuinfer_agent.slo_controller")
    lc = {"name": "u", "unit": "u.service", "port": 1, "slo_p99_ms": 1, "token_capacity_per_second": 10.0}
    config = {"slice": "be.slice", "instances": [lc],
              "min_percent": 20, "step_percent": 20, "base_cpus": "0", "lendable_cores": [], "psi_some_max": 40,
              "min_interval_seconds": 0, "dry_run": True, "probe_budget_share": 0.01, "probe_tokens": 8}
    instance = controller.Controller(config, None)
    instance.last.update(ratio=1.0, psi=1.0, instances={"u": {"p99_ms": 1.0}})
    names.update(re.findall(r"^# TYPE (\S+)", controller.unit_metrics.render(instance.families()), re.M))
    pull = importlib.import_module("cpuinfer_agent.pull_run")
    names.update(family.full_name for family in pull.families({}, 1.0))
    return names


def test_datasource_is_a_variable_everywhere():
    variables = {v["name"]: v for v in DASHBOARD["templating"]["list"]}
    assert variables["datasource"]["type"] == "datasource"
    # the import dialog asks for the data source (__inputs) and makes it the variable's default
    assert [(i["name"], i["type"], i["pluginId"]) for i in DASHBOARD["__inputs"]] == [("DS_PROMETHEUS", "datasource", "prometheus")]
    assert variables["datasource"]["current"]["value"] == "${DS_PROMETHEUS}"
    assert variables["datasource"]["query"] == "prometheus"
    for panel in DASHBOARD["panels"]:
        assert panel["datasource"] == {"type": "prometheus", "uid": "${datasource}"}, panel["title"]
    for target in targets():
        assert target["datasource"]["uid"] == "${datasource}"


def test_panels_are_laid_out_without_overlap():
    cells = set()
    ids = [panel["id"] for panel in DASHBOARD["panels"]]
    assert len(ids) == len(set(ids))
    for panel in DASHBOARD["panels"]:
        pos = panel["gridPos"]
        assert pos["x"] + pos["w"] <= 24
        mine = {(x, y) for x in range(pos["x"], pos["x"] + pos["w"]) for y in range(pos["y"], pos["y"] + pos["h"])}
        assert not cells & mine, panel["title"]
        cells |= mine
    assert {"heatmap", "timeseries"} <= {panel["type"] for panel in DASHBOARD["panels"]}
    assert DASHBOARD["uid"] and DASHBOARD["schemaVersion"] >= 36


def test_queries_use_only_emitted_metrics(tmp_path):
    emitted = emitted_names(tmp_path)
    for target in targets():
        without_strings = re.sub(r'"[^"]*"', '""', target["expr"])
        without_labels = re.sub(r"\{[^}]*\}|\[[^\]]*\]|by \([^)]*\)", " ", without_strings)
        for name in re.findall(r"[a-zA-Z_:][a-zA-Z0-9_:]*", without_labels):
            assert name in emitted or name in PROMQL_FUNCTIONS or name in FRONT_DOOR_METRICS, "%s in %s" % (name, target["expr"])


@pytest.mark.skipif(not PROMTOOL.exists(), reason="scripts/bootstrap puts promtool in .build/tools")
def test_every_query_parses(tmp_path):
    rules = {"groups": [{"name": "dashboard", "rules": [
        {"record": "dashboard:query%d" % index,
         "expr": target["expr"].replace("$instance", ".*").replace("$unit", ".*").replace("$__rate_interval", "5m")}
        for index, target in enumerate(targets())]}]}
    path = tmp_path / "rules.yml"
    path.write_text(yaml.safe_dump(rules))
    result = subprocess.run([str(PROMTOOL), "check", "rules", str(path)], capture_output=True, text=True, check=False)
    assert result.returncode == 0, result.stdout + result.stderr
