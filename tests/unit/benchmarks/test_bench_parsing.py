"""What the benchmarks read (ansible-playbook's output, the committed reports) and the tables they write."""

import json
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
    again = dict(run, hosts=1, run="re-converge", seconds=90, changed=0, controller_cpu_seconds=41.26)
    data = {"environment": {"command": "benchmarks/run converge --hosts 1", "date": "e", "commit": "def"},
            "note": "n", "wheel_cache": "the default", "playbook_env": {"ANSIBLE_PIPELINING": "true"},
            "runs": [dict(run, hosts=1, seconds=300), again] + carried}
    table = bench.converge_markdown(data)
    assert "ansible-playbook with ANSIBLE_PIPELINING=true" in table
    assert "| 1 | 1 | first converge | 300 | 1.00 | - | 75 | 0 | this run |" in table
    assert "| 1 | 1 | re-converge | 90 | 0.30 | 41.3 | 0 | 0 | this run |" in table
    assert "| 3 | 1 | first converge | 779 | 1.00 | - | 75 | 0 | carried: `benchmarks/run converge` (d, commit abc) |" in table


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


def test_reconverge_ratios_pair_each_repeat_with_its_own_first_converge():
    runs = [{"hosts": 1, "repeat": 0, "run": "first converge", "seconds": 400},
            {"hosts": 1, "repeat": 0, "run": "re-converge", "seconds": 100},
            {"hosts": 1, "repeat": 1, "run": "first converge", "seconds": 200},
            {"hosts": 1, "repeat": 1, "run": "re-converge", "seconds": 100},
            {"hosts": 1, "repeat": 2, "run": "first converge", "seconds": 300},
            {"hosts": 1, "repeat": 2, "run": "re-converge", "seconds": 90}]
    spread = bench.reconverge_ratios(runs)["1"]
    assert spread["per_repeat"] == [0.25, 0.5, 0.3]
    assert (spread["median"], spread["min"], spread["max"]) == (0.3, 0.25, 0.5)


def _isolation_samples(repeat, rates):
    return [{"variant": variant, "round": 0, "repeat": repeat, "tokens_per_second": rate, "first_token_ms": 50.0,
             "gaps_ms": [1000.0 / rate] * 10} for variant, rate in rates.items()]


def test_the_isolation_report_gives_every_ratio_per_repeat_and_the_goal_per_repeat():
    solo = {"a_untuned": 40.0, "a_tuned": 30.0, "b_untuned_neighbour": 10.0, "d_untuned_membw_neighbour": 20.0,
            "e_tuned_membw_neighbour": 24.0}
    repeats = [dict(solo, c_tuned_neighbour=28.5), dict(solo, c_tuned_neighbour=24.0), dict(solo, c_tuned_neighbour=29.0)]
    raws = [{"samples": _isolation_samples(index, rates)} for index, rates in enumerate(repeats)]
    data = {"environment": {"command": "benchmarks/run isolation", "date": "d", "commit": "c", "controller_cpu": "x",
                            "controller_cpus": 2},
            "note": "n", "repeats": 3, "measure_seconds": [200, 201, 199], "rounds": 1, "completions_per_variant": 1,
            "tokens_per_completion": 10, "units": {},
            "samples": [s for raw in raws for s in raw["samples"]], **bench.isolation_results(raws),
            "conditions": {"machine_check": [], "pinned": True, "qemu_threads_per_repeat": []}}
    data["summary"] = bench.stats.summarize(data["samples"])
    table = bench.isolation_markdown(data)
    assert "| c_tuned_neighbour | 28.50 | 28.50 24.00 29.00 |" in table
    assert "| c_tuned_neighbour/a_tuned | 0.95 [0.80 - 0.97] | 0.95 0.80 0.97 |" in table
    assert "- c_tuned_neighbour/a_tuned: met in 2 of 3 repeats; met at the median." in table
    assert "- e_tuned_membw_neighbour/a_tuned: met in 0 of 3 repeats; not met at the median." in table


def test_every_ratio_the_goal_judges_is_one_the_report_computes():
    assert set(bench.ISOLATION_GOAL_RATIOS) <= set(bench.ISOLATION_RATIOS)


def test_the_servers_own_rate_gives_its_ratios_per_repeat_and_none_without_it():
    def raw(rates):
        return {"samples": [dict(s, server_tokens_per_second=rates[s["variant"]] * 2)
                            for s in _isolation_samples(0, rates)]}
    solo = {"a_untuned": 40.0, "a_tuned": 30.0, "b_untuned_neighbour": 10.0, "c_tuned_neighbour": 27.0,
            "d_untuned_membw_neighbour": 20.0, "e_tuned_membw_neighbour": 24.0}
    server = bench.server_side_rates([raw(solo), raw(dict(solo, c_tuned_neighbour=15.0))])
    assert server["ratios"]["c_tuned_neighbour/a_tuned"]["server_tokens_per_second"]["per_repeat"] == [0.9, 0.5]
    assert server["tokens_per_second_median"]["c_tuned_neighbour"] == 42.0
    assert "| c_tuned_neighbour/a_tuned | 0.70 [0.50 - 0.90] | 0.90 0.50 |" in bench.server_side_markdown(server)
    assert bench.server_side_rates([{"samples": _isolation_samples(0, solo)}]) is None
    # a run whose untuned twin had no --metrics: the tuned ratios only
    tuned_only = [{"samples": [dict(s, server_tokens_per_second=None if "untuned" in s["variant"] else 1.0)
                               for s in _isolation_samples(0, solo)]}]
    assert sorted(bench.server_side_rates(tuned_only)["ratios"]) == ["c_tuned_neighbour/a_tuned",
                                                                     "e_tuned_membw_neighbour/a_tuned"]


def test_a_report_is_recomputed_from_its_own_samples(tmp_path, monkeypatch):
    rates = {"a_untuned": 40.0, "a_tuned": 30.0, "b_untuned_neighbour": 10.0, "c_tuned_neighbour": 27.0,
             "d_untuned_membw_neighbour": 20.0, "e_tuned_membw_neighbour": 24.0}
    samples = _isolation_samples(0, rates) + _isolation_samples(1, dict(rates, c_tuned_neighbour=15.0))
    report = tmp_path / "isolation-second.json"
    report.write_text(json.dumps({"repeats": 2, "samples": samples, "environment": {"commit": "abc"},
                                  "ratios": {}, "goal": []}), encoding="utf-8")
    monkeypatch.setattr(bench, "environment", lambda: {"commit": "def"})
    data = bench.rendered_again(report)
    assert data["environment"] == {"commit": "abc"} and data["rendered_by"] == "def"
    assert data["ratios"]["c_tuned_neighbour/a_tuned"]["tokens_per_second"]["per_repeat"] == [0.9, 0.5]
    assert data["goal"][0]["met_per_repeat"] == [True, False]


def test_every_benchmark_is_a_command(monkeypatch, capsys):
    for name in ("isolation", "build", "governor", "converge", "concurrency", "cores"):
        monkeypatch.setattr(sys, "argv", ["bench.py", name, "--help"])
        try:
            bench.main()
        except SystemExit as exit_:
            assert exit_.code == 0
        assert "usage: bench.py %s" % name in capsys.readouterr().out
