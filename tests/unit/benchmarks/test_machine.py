"""The conditions a benchmark records: a busy machine refused, qemu threads' CPU and their pinning."""

import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[3] / "benchmarks"))

import machine  # noqa: E402


def test_a_busy_machine_is_named(tmp_path, monkeypatch):
    monkeypatch.setattr(machine.os, "getloadavg", lambda: (0.1, 0.1, 0.1))
    for pid, argv in ((10, [b"qemu-system-x86_64", b"-name", b"cpuinfer-lab:bench-iso-1,debug-threads=on"]),
                      (11, [b"qemu-system-aarch64", b"-name", b"cpuinfer-lab:mol-arm64"]),
                      (12, [b"/usr/bin/python3", b"x"])):
        (tmp_path / str(pid)).mkdir()
        (tmp_path / str(pid) / "cmdline").write_bytes(b"\0".join(argv) + b"\0")
    assert machine.busy_machine(["bench-iso-1"], str(tmp_path)) == ["another qemu runs: pid 11 (cpuinfer-lab:mol-arm64)"]
    monkeypatch.setattr(machine.os, "getloadavg", lambda: (9.0, 1, 1))
    assert machine.busy_machine(["bench-iso-1", "mol-arm64"], str(tmp_path))[0].startswith("load average 9.00")
    with pytest.raises(SystemExit, match="busy"):
        monkeypatch.setattr(machine, "busy_machine", lambda own: ["load average 9.00 on 2 CPUs"])
        machine.check_machine(["bench-iso-1"], force=False, log=print)
    assert machine.check_machine(["bench-iso-1"], force=True, log=lambda message: None) == ["load average 9.00 on 2 CPUs"]


def test_qemu_thread_cpu_during_the_measurement_and_its_report():
    before = {"vm": {"pinning": {}, "threads": [{"tid": 1, "name": "CPU 0/TCG", "cpu_seconds": 10.0},
                                                {"tid": 2, "name": "qemu-system-x86", "cpu_seconds": 1.0}]}}
    after = {"vm": {"pinning": {"CPU 0/TCG": [0]}, "threads": [{"tid": 1, "name": "CPU 0/TCG", "cpu_seconds": 70.5},
                                                               {"tid": 2, "name": "qemu-system-x86", "cpu_seconds": 4.0}]}}
    used = machine.thread_cpu_during(before, after)
    assert used == {"vm": {"pinning": {"CPU 0/TCG": [0]}, "cpu_seconds": {"CPU 0/TCG": 60.5, "qemu-system-x86": 3.0}}}
    lines = machine.conditions_markdown({"machine_check": [], "qemu_threads": used})
    assert "quiet" in lines[1] and "CPU 0/TCG 60.5 s, qemu-system-x86 3.0 s (CPU 0/TCG on [0])" in lines[2]


def test_each_repeat_has_its_own_thread_reading_in_the_report():
    reading = {"vm": {"pinning": {"CPU 1/TCG": [1]}, "cpu_seconds": {"CPU 1/TCG": 50.0}}}
    lines = machine.conditions_markdown({"machine_check": ["load average 1.20 on 2 CPUs"],
                                         "qemu_threads_per_repeat": [reading, reading]})
    assert lines[1] == "Machine before the run: load average 1.20 on 2 CPUs."
    assert lines[2].startswith("vm (repeat 1): ") and lines[3].startswith("vm (repeat 2): ")


def test_pinning_is_on_by_default_and_repeats_default_to_three():
    parser = machine.argparse.ArgumentParser()
    machine.add_options(parser, repeats=3)
    assert vars(parser.parse_args([])) == {"repeats": 3, "pin": True, "force": False}
    assert parser.parse_args(["--no-pin", "--repeats", "1"]).pin is False
