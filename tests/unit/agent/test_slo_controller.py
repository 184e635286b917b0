"""The SLO controller: reads (probe, engine counters, PSI) on a temporary cgroup tree, acts on the
best-effort slice only, falls back to the safe minimum, and reports every decision."""

import json
import socket
import subprocess
from pathlib import Path

import pytest

from cpuinfer_agent import slo_controller, stream_probe

REPO = Path(__file__).resolve().parents[3]
PROMTOOL = REPO / ".build" / "tools" / "promtool"
LC_UNIT = "cpuinfer-llama-tiny.service"
LC_GROUP = "sys/fs/cgroup/cpuinfer.slice/cpuinfer-inference.slice/" + LC_UNIT
BE_GROUP = "sys/fs/cgroup/cpuinfer.slice/cpuinfer-besteffort.slice"


def config(**overrides):
    base = {"slice": "cpuinfer-besteffort.slice",
            "instances": [{"name": "tiny", "unit": LC_UNIT, "port": 8081, "slo_p99_ms": 100, "ttft_slo_ms": 0}],
            "min_percent": 20, "step_percent": 20, "base_cpus": "0", "lendable_cores": ["1", "2-3"],
            "psi_some_max": 40.0, "window_seconds": 10, "probe_interval_seconds": 2, "probe_tokens": 8,
            "min_interval_seconds": 0, "decision_log": "/dev/null", "textfile": "", "dry_run": False}
    base.update(overrides)
    return base


class FakeSystemd:
    def __init__(self):
        self.writes = []

    def set_be(self, slice_name, quota_percent, cpus):
        self.writes.append((slice_name, quota_percent, cpus))


def tree(root, psi_some="0.00", idle="0"):
    pressure = ("some avg10=%s avg60=0.00 avg300=0.00 total=1\n"
                "full avg10=0.00 avg60=0.00 avg300=0.00 total=0\n" % psi_some)
    for group, files in ((LC_GROUP, {"cpu.pressure": pressure, "cpu.stat": "usage_usec 1\n"}),
                         (BE_GROUP, {"cpu.idle": idle + "\n"})):
        (root / group).mkdir(parents=True, exist_ok=True)
        for name, text in files.items():
            (root / group / name).write_text(text)


def probe_of(gaps_ms):
    def probe(port, tokens, key):
        if gaps_ms is None:
            raise ConnectionRefusedError("refused")
        return {"gaps_ms": list(gaps_ms), "first_token_ms": 50.0}
    return probe


def counters_of(readings):
    """Each call returns the next reading; None raises as an engine that does not answer."""
    readings = list(readings)

    def counters(port, key):
        reading = readings.pop(0) if len(readings) > 1 else readings[0]
        if reading is None:
            raise ConnectionRefusedError("refused")
        return {"llamacpp:tokens_predicted_total": reading[0], "llamacpp:tokens_predicted_seconds_total": reading[1]}
    return counters


@pytest.fixture(autouse=True)
def no_keys(monkeypatch):
    monkeypatch.setattr(stream_probe, "api_key_of", lambda name: "")


def controller(tmp_path, gaps_ms, readings=(None,), **overrides):
    systemd = FakeSystemd()
    return slo_controller.Controller(config(**overrides), systemd, root=str(tmp_path), probe=probe_of(gaps_ms),
                                     counters=counters_of(readings), wall=lambda: 1.0), systemd


def test_slack_grows_be_and_then_lends_a_core_sharing_the_inference_cpus(tmp_path):
    tree(tmp_path)
    ctl, systemd = controller(tmp_path, [10.0] * 8)
    for dummy in range(6):
        ctl.observe()
        record = ctl.step()
    assert [w[1:] for w in systemd.writes] == [(40, "0"), (60, "0"), (80, "0"), (100, "0"), (100, "0-1"), (120, "0-1")]
    assert record["action"] == "grow" and record["after"] == {"quota_percent": 120, "lent_cores": 1, "cpus": "0-1"}
    assert all(w[0] == "cpuinfer-besteffort.slice" for w in systemd.writes)  # never an LC unit


def test_a_breach_cuts_be_and_takes_every_lent_core_back(tmp_path):
    tree(tmp_path)
    ctl, systemd = controller(tmp_path, [300.0] * 8)
    ctl.state = slo_controller.slo_rule.State(300, 2)
    ctl.observe()
    record = ctl.step()
    assert record["action"] == "cut" and record["ratio"] == 3.0
    assert systemd.writes == [("cpuinfer-besteffort.slice", 100, "0")]  # halved, then capped to BE's own CPU


def test_the_engines_counters_count_for_its_clients_requests(tmp_path):
    tree(tmp_path)
    # probes look fine (10 ms), but the clients' tokens took 150 ms each: 100 tokens in 15 s
    ctl, systemd = controller(tmp_path, [10.0] * 8, readings=[(1000, 10.0), (1100, 25.0)])
    ctl.state = slo_controller.slo_rule.State(80, 0)
    ctl.observe()
    first = ctl.step()  # no earlier reading: the probes' 10 ms decide
    assert first["lc_mean_token_ms"] == {"tiny": None} and first["action"] == "grow"
    ctl.state = slo_controller.slo_rule.State(80, 0)
    ctl.observe()
    record = ctl.step()
    assert record["lc_mean_token_ms"] == {"tiny": 150.0}
    assert record["action"] == "cut" and record["ratio"] == 1.5


def test_pressure_of_the_lc_group_cuts_before_the_tail_breaches(tmp_path):
    tree(tmp_path, psi_some="62.50")
    ctl, systemd = controller(tmp_path, [80.0] * 8)
    ctl.state = slo_controller.slo_rule.State(100, 1)
    ctl.observe()
    record = ctl.step()
    assert record["lc_cpu_pressure_some"] == 62.5
    assert systemd.writes == [("cpuinfer-besteffort.slice", 80, "0")]


def test_unreadable_latency_puts_be_at_the_safe_minimum(tmp_path):
    tree(tmp_path)
    ctl, systemd = controller(tmp_path, None)
    ctl.state = slo_controller.slo_rule.State(200, 1)
    ctl.observe()
    record = ctl.step()
    assert record["action"] == "safe" and record["ratio"] is None
    assert systemd.writes == [("cpuinfer-besteffort.slice", 20, "0")]


def test_dry_run_decides_and_writes_nothing(tmp_path):
    tree(tmp_path)
    ctl, systemd = controller(tmp_path, [10.0] * 8, dry_run=True)
    ctl.observe()
    assert ctl.step()["after"]["quota_percent"] == 40
    assert systemd.writes == []


def test_cpu_idle_is_kept_on_the_slice(tmp_path):
    tree(tmp_path, idle="0")
    ctl, dummy = controller(tmp_path, [10.0] * 8)
    ctl.keep_idle()
    assert (tmp_path / BE_GROUP / "cpu.idle").read_text() == "1"
    assert ctl.idle_supported is True
    (tmp_path / BE_GROUP / "cpu.idle").unlink()  # a kernel before 5.15
    ctl.keep_idle()
    assert ctl.idle_supported is False


def test_the_loop_restores_the_safe_minimum_when_it_fails(tmp_path, monkeypatch):
    tree(tmp_path)
    ctl, systemd = controller(tmp_path, [10.0] * 8)
    ctl.state = slo_controller.slo_rule.State(300, 2)

    def crash(dummy):
        raise RuntimeError("a bug")
    monkeypatch.setattr(slo_controller, "Controller", lambda cfg, sd: ctl)
    monkeypatch.setattr(slo_controller, "run", lambda cfg, c: crash(c))
    path = tmp_path / "config.json"
    path.write_text(json.dumps(config()))
    with pytest.raises(RuntimeError):
        slo_controller.main([str(path)])
    assert systemd.writes[-1] == ("cpuinfer-besteffort.slice", 20, "0")


def test_restore_mode_only_restores(tmp_path, monkeypatch):
    systemd = FakeSystemd()
    monkeypatch.setattr(slo_controller, "Systemd", lambda: systemd)
    path = tmp_path / "config.json"
    path.write_text(json.dumps(config()))
    assert slo_controller.main(["--restore", str(path)]) == 0
    assert systemd.writes == [("cpuinfer-besteffort.slice", 20, "0")]


def test_systemd_sets_quota_and_cpus_at_runtime_only():
    calls = []
    slo_controller.Systemd(run=lambda argv, **kw: calls.append(argv)).set_be("be.slice", 120, "0-1")
    assert calls == [["systemctl", "set-property", "--runtime", "be.slice", "CPUQuota=120%", "AllowedCPUs=0-1"]]


def test_watchdog_notifications_reach_the_socket(tmp_path):
    path = str(tmp_path / "notify")
    with socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM) as sock:
        sock.bind(path)
        slo_controller.notify("WATCHDOG=1", environ={"NOTIFY_SOCKET": path})
        assert sock.recv(64) == b"WATCHDOG=1"
    slo_controller.notify("WATCHDOG=1", environ={})  # not under systemd: nothing to do


def test_mean_token_ms_ignores_restarts_and_quiet_windows():
    reading = {"llamacpp:tokens_predicted_total": 10, "llamacpp:tokens_predicted_seconds_total": 1.0}
    assert slo_controller.mean_token_ms(None, reading) is None
    assert slo_controller.mean_token_ms(reading, reading) is None
    assert slo_controller.mean_token_ms({"llamacpp:tokens_predicted_total": 50,
                                         "llamacpp:tokens_predicted_seconds_total": 9.0}, reading) is None


@pytest.mark.skipif(not PROMTOOL.exists(), reason="scripts/bootstrap puts promtool in .build/tools")
def test_metrics_pass_promtool(tmp_path):
    tree(tmp_path)
    ctl, dummy = controller(tmp_path, [10.0] * 8)
    ctl.keep_idle()
    ctl.observe()
    ctl.step()
    text = slo_controller.unit_metrics.render(ctl.families())
    assert 'cpuinfer_slo_controller_decisions_total{action="grow",slice="cpuinfer-besteffort.slice"} 1.0' in text
    assert 'cpuinfer_slo_controller_lc_p99_seconds{unit="cpuinfer-llama-tiny.service"} 0.01' in text
    check = subprocess.run([str(PROMTOOL), "check", "metrics"], input=text, capture_output=True, text=True, check=False)
    assert check.returncode == 0, check.stdout + check.stderr
