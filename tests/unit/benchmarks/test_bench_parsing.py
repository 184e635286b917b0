"""What the benchmarks read (ansible-playbook's output, the committed reports) and check (a busy machine)."""

import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[3] / "benchmarks"))

import bench  # noqa: E402

OUTPUT = """
TASK [cpuinfer.llm.llama_server : Build the engine once per CPU class, on the controller (llama-server, libraries, wheel; one archive)] ***
changed: [bench-conv-1 -> localhost] => (item=x86-avx2)

TASK [cpuinfer.llm.llama_server : Pick this host's build] ***
changed: [bench-conv-1]

PLAY RECAP *********************************************************************
bench-conv-1               : ok=80   changed=41   unreachable=0    failed=0    skipped=9    rescued=0    ignored=0
bench-conv-2               : ok=70   changed=0    unreachable=0    failed=1    skipped=9    rescued=0    ignored=0
"""


def test_recap_per_host():
    hosts = bench.recap(OUTPUT)
    assert hosts["bench-conv-1"] == {"ok": 80, "changed": 41, "unreachable": 0, "failed": 0}
    assert hosts["bench-conv-2"]["failed"] == 1


def test_wheel_builds_counts_only_the_build_task():
    assert bench.wheel_builds(OUTPUT) == 1
    assert bench.wheel_builds(OUTPUT.replace("changed: [bench-conv-1 -> localhost]", "ok: [bench-conv-1 -> localhost]")) == 0
    assert bench.wheel_builds("PLAY RECAP") == 0


def test_a_skipped_place_is_carried_with_who_measured_it(tmp_path, monkeypatch):
    monkeypatch.setattr(bench, "OUT", tmp_path)
    previous = {"environment": {"command": "benchmarks/run concurrency --skip-vm", "date": "d", "commit": "abc"},
                "places": {"controller (native)": {"trials": [1]}, "lab VM (TCG, 2 vCPUs)": {"trials": [2]}}}
    (tmp_path / "concurrency.json").write_text(bench.json.dumps(previous), encoding="utf-8")
    carried = bench.carried_places("concurrency", {"lab VM (TCG, 2 vCPUs)": {"trials": [3]}})
    assert list(carried) == ["controller (native)"]
    assert carried["controller (native)"]["trials"] == [1]
    assert carried["controller (native)"]["measured_by"]["commit"] == "abc"
    again = bench.carried_places("concurrency", {})  # a carried place keeps its first origin
    (tmp_path / "concurrency.json").write_text(bench.json.dumps(dict(previous, places=carried,
                                               environment={"command": "x", "date": "e", "commit": "def"})),
                                               encoding="utf-8")
    assert bench.carried_places("concurrency", {})["controller (native)"]["measured_by"]["commit"] == "abc"
    assert set(again) == set(previous["places"])
    assert bench.carried_places("missing", {}) == {}


def test_converge_runs_of_skipped_host_counts_are_carried_and_printed_as_such(tmp_path, monkeypatch):
    monkeypatch.setattr(bench, "OUT", tmp_path)
    run = {"run": "first converge", "seconds": 779, "changed": 75, "wheel_builds": 0, "boot_seconds": 60}
    previous = {"environment": {"command": "benchmarks/run converge", "date": "d", "commit": "abc"},
                "runs": [dict(run, hosts=1, seconds=403), dict(run, hosts=3)]}
    (tmp_path / "converge.json").write_text(bench.json.dumps(previous), encoding="utf-8")
    carried = bench.carried_runs([1])
    assert [(r["hosts"], r["seconds"], r["measured_by"]["commit"]) for r in carried] == [(3, 779, "abc")]
    again = dict(run, hosts=1, run="re-converge", seconds=90, changed=0, controller_cpu_seconds=41.26)
    data = {"environment": {"command": "benchmarks/run converge --hosts 1", "date": "e", "commit": "def"},
            "note": "n", "wheel_cache": "the default", "playbook_env": {"ANSIBLE_PIPELINING": "true"},
            "runs": [dict(run, hosts=1, seconds=300), again] + carried}
    table = bench.converge_markdown(data)
    assert "ansible-playbook with ANSIBLE_PIPELINING=true" in table
    assert "| 1 | first converge | 300 | 1.00 | - | 75 | 0 | this run |" in table
    assert "| 1 | re-converge | 90 | 0.30 | 41.3 | 0 | 0 | this run |" in table
    assert "| 3 | first converge | 779 | 1.00 | - | 75 | 0 | carried: `benchmarks/run converge` (d, commit abc) |" in table


def test_a_playbook_reports_the_controller_cpu_it_cost(tmp_path, monkeypatch):
    monkeypatch.setattr(bench, "REPO", bench.Path("/"))
    usage = {}
    busy = "s = 0\nfor i in range(3 * 10 ** 6): s += i"
    fake = tmp_path / "fake-ansible-playbook"
    fake.write_text("#!%s\nimport os\nassert os.environ['ANSIBLE_PIPELINING'] == 'true'\n%s\n" % (bench.sys.executable, busy))
    fake.chmod(0o755)
    monkeypatch.setattr(bench.subprocess, "run", _renamed_run(bench.subprocess.run, "ansible-playbook", str(fake)))
    seconds, output = bench.playbook("inventory", "book.yml", usage=usage)
    assert usage["controller_cpu_seconds"] > 0.05 and seconds > 0, output


def _renamed_run(run, name, replacement):
    def wrapped(argv, **kwargs):
        return run([replacement if part == name else part for part in argv], **kwargs)
    return wrapped


def test_a_busy_machine_is_named(tmp_path, monkeypatch):
    monkeypatch.setattr(bench.os, "getloadavg", lambda: (0.1, 0.1, 0.1))
    for pid, argv in ((10, [b"qemu-system-x86_64", b"-name", b"cpuinfer-lab:bench-iso-1,debug-threads=on"]),
                      (11, [b"qemu-system-aarch64", b"-name", b"cpuinfer-lab:mol-arm64"]),
                      (12, [b"/usr/bin/python3", b"x"])):
        (tmp_path / str(pid)).mkdir()
        (tmp_path / str(pid) / "cmdline").write_bytes(b"\0".join(argv) + b"\0")
    assert bench.busy_machine(["bench-iso-1"], str(tmp_path)) == ["another qemu runs: pid 11 (cpuinfer-lab:mol-arm64)"]
    monkeypatch.setattr(bench.os, "getloadavg", lambda: (9.0, 1, 1))
    assert bench.busy_machine(["bench-iso-1", "mol-arm64"], str(tmp_path))[0].startswith("load average 9.00")
    with pytest.raises(SystemExit, match="busy"):
        monkeypatch.setattr(bench, "busy_machine", lambda own: ["load average 9.00 on 2 CPUs"])
        bench.check_machine(["bench-iso-1"], force=False)
    assert bench.check_machine(["bench-iso-1"], force=True) == ["load average 9.00 on 2 CPUs"]


def test_qemu_thread_cpu_during_the_measurement_and_its_report():
    before = {"vm": {"pinning": {}, "threads": [{"tid": 1, "name": "CPU 0/TCG", "cpu_seconds": 10.0},
                                                {"tid": 2, "name": "qemu-system-x86", "cpu_seconds": 1.0}]}}
    after = {"vm": {"pinning": {"CPU 0/TCG": [0]}, "threads": [{"tid": 1, "name": "CPU 0/TCG", "cpu_seconds": 70.5},
                                                               {"tid": 2, "name": "qemu-system-x86", "cpu_seconds": 4.0}]}}
    used = bench.thread_cpu_during(before, after)
    assert used == {"vm": {"pinning": {"CPU 0/TCG": [0]}, "cpu_seconds": {"CPU 0/TCG": 60.5, "qemu-system-x86": 3.0}}}
    lines = bench.conditions_markdown({"machine_check": [], "qemu_threads": used})
    assert "quiet" in lines[1] and "CPU 0/TCG 60.5 s, qemu-system-x86 3.0 s (CPU 0/TCG on [0])" in lines[2]
