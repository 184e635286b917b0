"""What the converge benchmark reads from ansible-playbook's output."""

import sys
from pathlib import Path

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
    data = {"environment": {"command": "benchmarks/run converge --hosts 1", "date": "e", "commit": "def"},
            "note": "n", "wheel_cache": "the default", "runs": [dict(run, hosts=1, seconds=300)] + carried}
    table = bench.converge_markdown(data)
    assert "| 1 | first converge | 300 | 75 | 0 | this run |" in table
    assert "| 3 | first converge | 779 | 75 | 0 | carried: `benchmarks/run converge` (d, commit abc) |" in table
