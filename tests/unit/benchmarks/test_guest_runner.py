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
