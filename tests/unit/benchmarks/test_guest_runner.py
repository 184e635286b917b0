"""The isolation benchmark's guest side: which variants a run measures, with which neighbour, in which order."""

import json
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[3]
sys.path.insert(0, str(ROOT / "agent" / "cpuinfer_agent"))  # the VM gets stream_probe.py beside the runner
sys.path.insert(0, str(ROOT / "benchmarks" / "isolation"))

import guest_runner  # noqa: E402


def run(monkeypatch, capsys, argv):
    started = []
    monkeypatch.setattr(guest_runner, "SETTLE_SECONDS", 0)
    monkeypatch.setattr(guest_runner.stream_probe, "measure", lambda port, tokens, key: {"port": port})
    monkeypatch.setattr(guest_runner, "server_counters", lambda port: None)
    monkeypatch.setattr(guest_runner, "systemctl", lambda *args: started.append(args))
    monkeypatch.setattr(guest_runner, "unit_settings", lambda unit: {})
    monkeypatch.setattr(guest_runner.subprocess, "run", lambda *a, **k: type("R", (), {"stdout": "2\n"})())
    monkeypatch.setattr(sys, "argv", ["guest_runner.py", *argv])
    guest_runner.main()
    return json.loads(capsys.readouterr().out), started


def test_every_variant_by_default_with_its_own_neighbour(monkeypatch, capsys):
    out, started = run(monkeypatch, capsys, ["2", "1", "8"])
    order = [s["variant"] for s in out["samples"]]
    assert order[:6] == ["a_untuned", "a_tuned", "b_untuned_neighbour", "c_tuned_neighbour",
                         "d_untuned_membw_neighbour", "e_tuned_membw_neighbour"]
    assert order[6:] == order[:6] and [s["round"] for s in out["samples"]] == [0] * 6 + [1] * 6
    assert ("start", "bench-membw-housekeeping.service") in started and ("stop", "bench-membw-housekeeping.service") in started
    tuned_membw = [s for s in out["samples"] if s["variant"] == "e_tuned_membw_neighbour"]
    assert {s["port"] for s in tuned_membw} == {guest_runner.TUNED_PORT}
    assert "bench-membw-anywhere.service" in out["units"]


def test_named_variants_only(monkeypatch, capsys):
    out, started = run(monkeypatch, capsys, ["1", "1", "8", "cpuinfer-llama-tiny-llama.service",
                                             "a_untuned,a_tuned,b_untuned_neighbour,c_tuned_neighbour"])
    assert [s["variant"] for s in out["samples"]] == ["a_untuned", "a_tuned", "b_untuned_neighbour", "c_tuned_neighbour"]
    assert not any("membw" in unit for args in started for unit in args)
    assert "bench-membw-anywhere.service" not in out["units"] and "cpuinfer-llama-tiny-llama.service" in out["units"]


EXPOSITION = """# HELP llamacpp:tokens_predicted_total Number of generation tokens processed.
# TYPE llamacpp:tokens_predicted_total counter
llamacpp:tokens_predicted_total 789
llamacpp:tokens_predicted_seconds_total 8.4
llamacpp:prompt_seconds_total 5.6
"""


def test_the_servers_own_rate_comes_from_its_prediction_counters():
    before = guest_runner.parse_counters(EXPOSITION)
    assert before == {guest_runner.PREDICTED_TOKENS: 789.0, guest_runner.PREDICTED_SECONDS: 8.4}
    after = {guest_runner.PREDICTED_TOKENS: 821.0, guest_runner.PREDICTED_SECONDS: 10.4}
    assert guest_runner.server_rate(before, after) == 16.0
    assert guest_runner.server_rate(None, after) is None
    assert guest_runner.server_rate(after, after) is None
    assert guest_runner.parse_counters("llamacpp:tokens_predicted_total 1\n") is None


def test_each_completion_carries_the_servers_rate_over_it(monkeypatch):
    readings = iter([{guest_runner.PREDICTED_TOKENS: 0.0, guest_runner.PREDICTED_SECONDS: 0.0},
                     {guest_runner.PREDICTED_TOKENS: 30.0, guest_runner.PREDICTED_SECONDS: 1.5}])
    monkeypatch.setattr(guest_runner, "server_counters", lambda port: next(readings))
    monkeypatch.setattr(guest_runner.stream_probe, "measure", lambda port, tokens, key: {"tokens_per_second": 12.0})
    assert guest_runner.measure_completion(8081, 32) == {"tokens_per_second": 12.0, "server_tokens_per_second": 20.0}
