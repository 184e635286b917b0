"""What the benchmarks read (ansible-playbook's output, the committed reports) and the tables they write."""

import shlex
import subprocess
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[3] / "benchmarks"))

import bench  # noqa: E402
import common  # noqa: E402
import converge_bench  # noqa: E402
import converge_pull  # noqa: E402
from local_playbook import run_playbook  # noqa: E402

OUTPUT = """
TASK [cpuinfer.llm.llama_server : Build each engine source once per CPU class and release] ***
changed: [bench-conv-1 -> localhost] => (item=x86-avx2)

TASK [cpuinfer.llm.llama_server : Pick this host's build] ***
changed: [bench-conv-1]

PLAY RECAP *********************************************************************
bench-conv-1               : ok=80   changed=41   unreachable=0    failed=0    skipped=9    rescued=0    ignored=0
bench-conv-2               : ok=70   changed=0    unreachable=0    failed=1    skipped=9    rescued=0    ignored=0
"""


def test_recap_per_host():
    hosts = converge_bench.recap(OUTPUT)
    assert hosts["bench-conv-1"] == {"ok": 80, "changed": 41, "unreachable": 0, "failed": 0}
    assert hosts["bench-conv-2"]["failed"] == 1


def test_wheel_builds_counts_only_the_build_task():
    assert converge_bench.wheel_builds(OUTPUT) == 1
    assert converge_bench.wheel_builds(OUTPUT.replace("changed: [bench-conv-1 -> localhost]", "ok: [bench-conv-1 -> localhost]")) == 0
    assert converge_bench.wheel_builds("PLAY RECAP") == 0


def test_the_build_task_counted_is_the_roles():
    tasks = (common.REPO / "roles" / "llama_server" / "tasks" / "engines.yml").read_text(encoding="utf-8")
    name = converge_bench.WHEEL_TASK[len("TASK [cpuinfer.llm.llama_server : "):-1]
    assert "- name: %s\n" % name in tasks


def test_a_skipped_place_is_carried_with_who_measured_it(tmp_path, monkeypatch):
    monkeypatch.setattr(common, "OUT", tmp_path)
    previous = {"environment": {"command": "benchmarks/run concurrency --skip-vm", "date": "d", "commit": "abc"},
                "places": {"controller (native)": {"trials": [1]}, "lab VM (TCG, 2 vCPUs)": {"trials": [2]}}}
    (tmp_path / "concurrency.json").write_text(common.json.dumps(previous), encoding="utf-8")
    carried = common.carried_places("concurrency", {"lab VM (TCG, 2 vCPUs)": {"trials": [3]}})
    assert list(carried) == ["controller (native)"]
    assert carried["controller (native)"]["trials"] == [1]
    assert carried["controller (native)"]["measured_by"]["commit"] == "abc"
    again = common.carried_places("concurrency", {})  # a carried place keeps its first origin
    (tmp_path / "concurrency.json").write_text(common.json.dumps(dict(previous, places=carried,
                                               environment={"command": "x", "date": "e", "commit": "def"})),
                                               encoding="utf-8")
    assert common.carried_places("concurrency", {})["controller (native)"]["measured_by"]["commit"] == "abc"
    assert set(again) == set(previous["places"])
    assert common.carried_places("missing", {}) == {}


def test_converge_runs_of_skipped_host_counts_are_carried_and_printed_as_such(tmp_path, monkeypatch):
    monkeypatch.setattr(common, "OUT", tmp_path)
    run = {"run": "first converge", "seconds": 779, "changed": 75, "wheel_builds": 0, "boot_seconds": 60}
    previous = {"environment": {"command": "benchmarks/run converge", "date": "d", "commit": "abc"},
                "runs": [dict(run, hosts=1, seconds=403), dict(run, hosts=3)]}
    (tmp_path / "converge.json").write_text(common.json.dumps(previous), encoding="utf-8")
    carried = converge_bench.carried_runs([1])
    assert [(r["hosts"], r["seconds"], r["measured_by"]["commit"]) for r in carried] == [(3, 779, "abc")]
    again = dict(run, hosts=1, run="re-converge", seconds=90, changed=0, controller_cpu_seconds=41.26)
    data = {"environment": {"command": "benchmarks/run converge --hosts 1", "date": "e", "commit": "def"},
            "note": "n", "wheel_cache": "the default", "playbook_env": {"ANSIBLE_PIPELINING": "true"},
            "runs": [dict(run, hosts=1, seconds=300), again] + carried}
    table = converge_bench.markdown(data)
    assert "ansible-playbook with ANSIBLE_PIPELINING=true" in table
    assert "| 1 | stock | 1 | first converge | 300 | 1.00 | - | - | - | 75 | 0 | this run |" in table
    assert "| 1 | stock | 1 | re-converge | 90 | 0.30 | 41.3 | - | - | 0 | 0 | this run |" in table
    assert "| 3 | stock | 1 | first converge | 779 | 1.00 | - | - | - | 75 | 0 | carried: `benchmarks/run converge` (d, commit abc) |" in table


def test_converge_runs_of_a_connection_not_measured_are_carried(tmp_path, monkeypatch):
    monkeypatch.setattr(common, "OUT", tmp_path)
    run = {"run": "re-converge", "seconds": 30, "changed": 0, "wheel_builds": 0, "hosts": 1}
    previous = {"environment": {"command": "benchmarks/run converge", "date": "d", "commit": "abc"},
                "runs": [run, dict(run, connection="mitogen", seconds=10)]}
    (tmp_path / "converge.json").write_text(common.json.dumps(previous), encoding="utf-8")
    assert [r["seconds"] for r in converge_bench.carried_runs([1], ["stock"])] == [10]
    assert [r["seconds"] for r in converge_bench.carried_runs([1], ["mitogen"])] == [30]
    assert converge_bench.carried_runs([1], ["stock", "mitogen"]) == []


def test_each_host_s_controller_cpu_is_three_hosts_less_one_halved_per_connection_and_run():
    def run(hosts, connection, cpu, name="re-converge", repeat=0, main=None):
        found = {"hosts": hosts, "connection": connection, "run": name, "repeat": repeat, "seconds": 60,
                 "changed": 0, "wheel_builds": 0, "controller_cpu_seconds": cpu}
        return found if main is None else dict(found, main_process_cpu_seconds=main)
    runs = [run(1, "stock", 5.0, main=1.6), run(3, "stock", 10.8, main=4.6), run(1, "mitogen", 4.0), run(3, "mitogen", 6.0),
            run(1, "stock", 7.0, "first converge"), run(3, "stock", 17.0, "first converge"),
            run(3, "stock", 99.0, repeat=1),  # no 1-host run of that repeat: no share
            dict(run(1, "mitogen", 1.0, "check mode"), measured_by={"commit": "old"}), run(3, "mitogen", 3.0, "check mode")]
    shares = converge_bench.per_host_cpu(runs)
    assert {key: [tuple(None if v is None else round(v, 2) for v in parts) for parts in values]
            for key, values in shares.items()} == {
        ("stock", "re-converge"): [(2.9, 1.5, 1.4)], ("mitogen", "re-converge"): [(1.0, None, None)],
        ("stock", "first converge"): [(5.0, None, None)]}
    data = {"environment": {"command": "c", "date": "e", "commit": "def"}, "note": "n", "wheel_cache": "w",
            "playbook_env": {}, "runs": runs[:6]}
    table = converge_bench.markdown(data)
    assert "| stock | re-converge | 2.9 | 1.5 | 1.4 |" in table and "| mitogen | re-converge | 1.0 | - | - |" in table
    assert table.index("| stock | re-converge | 2.9 |") < table.index("| mitogen | re-converge | 1.0 |")
    assert "| 1 | mitogen | 1 | re-converge | 60 | - | 4.0 | - | - | 0 | 0 | this run |" in table
    assert "| 1 | stock | 1 | re-converge | 60 | 1.00 | 5.0 | 1.6 | - | 0 | 0 | this run |" in table


def test_the_callback_writes_ansible_playbooks_own_cpu_apart_from_its_workers(tmp_path):
    out, book = tmp_path / "own.json", tmp_path / "play.yml"
    book.write_text("- hosts: localhost\n  connection: local\n  gather_facts: false\n  tasks:\n"
                    + "".join("    - ansible.builtin.command: 'true'\n" for dummy in range(3)))
    result = run_playbook(book, env=dict(common.CPU_CALLBACK_ENV, CPUINFER_CONTROLLER_CPU_FILE=str(out)))
    assert result.returncode == 0, result.stdout + result.stderr
    own = common.json.loads(out.read_text())["main_process_cpu_seconds"]
    # ansible-playbook starting (imports, the inventory, the play) costs its main process a few tenths at least
    assert 0.1 < own < 60


def test_a_playbook_reports_the_controller_cpu_it_cost(tmp_path, monkeypatch):
    monkeypatch.setattr(common, "REPO", common.Path("/"))
    usage = {}
    busy = "s = 0\nfor i in range(3 * 10 ** 6): s += i"
    fake = tmp_path / "fake-ansible-playbook"
    fake.write_text("#!%s\nimport os\nassert os.environ['ANSIBLE_PIPELINING'] == 'true'\n%s\n" % (common.sys.executable, busy))
    fake.chmod(0o755)
    monkeypatch.setattr(common.subprocess, "run", _renamed_run(common.subprocess.run, "ansible-playbook", str(fake)))
    seconds, output = common.playbook("inventory", "book.yml", usage=usage)
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
    spread = converge_bench.reconverge_ratios(runs)["stock 1"]
    assert spread["per_repeat"] == [0.25, 0.5, 0.3]
    assert (spread["median"], spread["min"], spread["max"]) == (0.3, 0.25, 0.5)


def test_every_benchmark_is_a_command(monkeypatch, capsys):
    for name in bench.BENCHMARKS:
        monkeypatch.setattr(sys, "argv", ["bench.py", name, "--help"])
        try:
            bench.main()
        except SystemExit as exit_:
            assert exit_.code == 0
        assert "usage: bench.py %s" % name in capsys.readouterr().out


def test_the_benchmarks_readme_lists_every_benchmark_and_no_other():
    readme = (common.REPO / "docs" / "benchmarks" / "README.md").read_text(encoding="utf-8")
    listed = {line.split()[1] for line in readme.splitlines() if line.startswith("benchmarks/run ") and "--" not in line.split()[1]}
    assert listed == set(bench.BENCHMARKS)


def test_every_report_opens_with_the_same_run_line():
    env = {"command": "benchmarks/run x", "date": "d", "commit": "c", "controller_cpu": "AMD EPYC", "controller_cpus": 2}
    assert common.run_line(env) == "Command: `benchmarks/run x` (d, commit c, controller: AMD EPYC, 2 CPUs)."
    assert common.run_line({"command": "y", "date": "d", "commit": "c"}, "; natively") == "Command: `y` (d, commit c); natively."
    for name in bench.BENCHMARKS.values():
        text = (common.REPO / "benchmarks" / ("%s.py" % name)).read_text(encoding="utf-8")
        assert "run_line(" in text and "Command: `%s`" not in text and "`%s` on %s, commit" not in text, name


def test_pull_runs_are_read_from_the_hosts_record_and_a_skipped_run_has_no_tasks():
    tasks = {"ok": 40, "changed": 0, "skipped": 20}
    converged = {"run": {"time": 100.0, "duration": 181.4, "succeeded": True},
                 "playbook": {"time": 100.0, "succeeded": True, "tasks": tasks}}
    assert converge_pull.record("first", converged) == {"run": "first", "seconds": 181.4, "succeeded": True,
                                                        "playbook_ran": True, "tasks": tasks}
    skipped = dict(converged, run={"time": 170.0, "duration": 6.04, "succeeded": True})
    assert converge_pull.record("unchanged", skipped)["playbook_ran"] is False
    assert converge_pull.record("unchanged", skipped)["tasks"] is None
    assert converge_pull.converged("abc")({"converged": {"commit": "abc"}})
    assert not converge_pull.converged("abc")({})


def test_pull_runs_are_printed_and_carried_when_not_measured(tmp_path, monkeypatch):
    monkeypatch.setattr(common, "OUT", tmp_path)
    pull = {"host": "bench-pull-1", "enable": {"seconds": 300, "controller_cpu_seconds": 12.34},
            "runs": [{"run": "first pull", "seconds": 181.4, "succeeded": True, "playbook_ran": True,
                      "tasks": {"ok": 40, "changed": 0, "skipped": 20}},
                     {"run": "unchanged", "seconds": 6.0, "succeeded": True, "playbook_ran": False, "tasks": None}]}
    previous = {"environment": {"command": "benchmarks/run converge", "date": "d", "commit": "abc"}, "runs": [],
                "pull": pull}
    (tmp_path / "converge.json").write_text(common.json.dumps(previous), encoding="utf-8")
    carried = converge_bench.carried_pull()
    assert carried["measured_by"]["commit"] == "abc" and carried["runs"] == pull["runs"]
    text = "\n".join(converge_bench.pull_markdown(carried))
    assert "| first pull | 181 | yes | 40 / 0 / 20 |" in text and "| unchanged | 6 | no | - |" in text
    assert "took 300 s (controller CPU 12.3 s" in text and "carried: `benchmarks/run converge` (d, commit abc)" in text
    assert converge_bench.pull_markdown(None) == []
    (tmp_path / "converge.json").write_text(common.json.dumps(dict(previous, pull=None)), encoding="utf-8")
    assert converge_bench.carried_pull() is None


def test_a_command_on_the_pull_host_reaches_its_shell_as_the_words_given(monkeypatch):
    seen = []

    def fake_run(argv, **_kwargs):
        seen.append(argv)
        return subprocess.CompletedProcess(argv, 0, stdout="{}", stderr="")

    monkeypatch.setattr(converge_pull.subprocess, "run", fake_run)
    converge_pull.host_state("bench-pull-1")
    # ssh hands the guest's shell one line: `sh -c cat FILE` unquoted would run `cat` alone
    assert shlex.split(seen[0][-1]) == ["sudo", "sh", "-c", "cat %s 2>/dev/null || true" % converge_pull.STATE]


def _worker(host, task, seconds, action="ansible.builtin.set_fact"):
    return {"host": host, "task": task, "action": action, "user": seconds / 2, "sys": seconds / 4,
            "children_user": seconds / 4, "children_sys": 0.0}


def test_task_cpu_counts_tasks_and_cost_per_host_leaving_the_controllers_own_play_out():
    records = [_worker("localhost", "Refuse a target", 0.5), _worker("h1", "plan", 0.02), _worker("h2", "plan", 0.04),
               _worker("h1", "units", 0.2, "cpuinfer.llm.release"), _worker("h2", "units", 0.1, "cpuinfer.llm.release"),
               _worker("h1", "skipped", 0.01)]
    found = common.task_cpu(records)
    assert found["tasks_per_host"] == 2.5
    assert found["workers_recorded_cpu_seconds_per_host"] == 0.19
    assert [(t["task"], t["action"], t["cpu_seconds_per_host"]) for t in found["top_tasks"]] == [
        ("units", "cpuinfer.llm.release", 0.15), ("plan", "ansible.builtin.set_fact", 0.03), ("skipped", "ansible.builtin.set_fact", 0.005)]
    assert common.task_cpu([_worker("localhost", "only the controller's", 1.0)]) == {}


def test_the_top_tasks_printed_are_the_stock_reconverge_of_the_most_hosts_measured():
    top = [{"task": "a | b", "action": "x.y", "cpu_seconds_per_host": 0.0456}]
    runs = [{"hosts": 1, "run": "re-converge", "top_tasks": [{"task": "one host", "action": "x", "cpu_seconds_per_host": 1}],
             "tasks_per_host": 50, "workers_recorded_cpu_seconds_per_host": 2.0},
            {"hosts": 3, "run": "re-converge", "top_tasks": top, "tasks_per_host": 47.3, "workers_recorded_cpu_seconds_per_host": 0.9},
            {"hosts": 3, "run": "re-converge", "connection": "mitogen", "top_tasks": [], "tasks_per_host": 1},
            {"hosts": 3, "run": "first converge", "top_tasks": [{"task": "first", "action": "x", "cpu_seconds_per_host": 9}]}]
    lines = converge_bench.top_tasks_markdown(runs)
    assert "(stock, 3 host(s), repeat 1;" in lines[1] and "0.90 s per host over 47.3 tasks in all" in lines[1]
    assert lines[-1] == "| a / b | `x.y` | 0.046 |"
    assert converge_bench.top_tasks_markdown([dict(r, measured_by={"command": "c"}) for r in runs]) == []


def test_one_vm_under_three_names_keeps_its_address_and_groups_but_the_canary(tmp_path):
    inventory, names = tmp_path / "inventory", tmp_path / "names"
    (inventory / "group_vars").mkdir(parents=True)
    names.mkdir()
    host = {"ansible_host": "127.0.0.1", "ansible_port": 2222, "lab_reached_at": {"vm-1": "127.0.0.1"}}
    (inventory / "hosts.yml").write_text(common.json.dumps({"all": {"children": {"lab": {
        "hosts": {"vm-1": host}, "children": {"xeon": {"hosts": {"vm-1": {}}}, "canary": {"hosts": {"vm-1": {}}}}}}}}))
    assert converge_bench.names_of_one(inventory, names, 3) == ["vm-1", "vm-1-as-2", "vm-1-as-3"]
    lab = common.json.loads((names / "hosts.yml").read_text())["all"]["children"]["lab"]
    assert lab["hosts"]["vm-1-as-3"] == dict(host, lab_reached_at={"vm-1-as-3": "127.0.0.1"})
    assert sorted(lab["children"]["xeon"]["hosts"]) == ["vm-1", "vm-1-as-2", "vm-1-as-3"]
    assert list(lab["children"]["canary"]["hosts"]) == ["vm-1"]
    assert (names / "group_vars").resolve() == (inventory / "group_vars").resolve()


def test_each_name_s_share_is_the_names_run_less_the_vm_s_own_re_converge_over_the_names_added():
    one = {"hosts": 1, "run": "re-converge", "controller_cpu_seconds": 4.0, "main_process_cpu_seconds": 1.2}
    names = {"hosts": 1, "names": 3, "run": converge_bench.NAMES_RUN, "controller_cpu_seconds": 7.0,
             "main_process_cpu_seconds": 2.2}
    shares = converge_bench.per_host_cpu([one, names])
    assert [tuple(round(v, 2) for v in s) for s in shares[("stock", converge_bench.NAMES_RUN)]] == [(1.5, 0.5, 1.0)]


TASKS_PLAYBOOK = """
- hosts: localhost
  connection: local
  gather_facts: false
  tasks:
    - name: Set one
      ansible.builtin.set_fact:
        one: 1
    - name: Skipped
      ansible.builtin.debug:
        msg: never
      when: false
    - name: Run a command
      ansible.builtin.command: "true"
      changed_when: false
"""


def test_the_task_callback_records_every_worker_and_its_profile_is_read(tmp_path):
    import worker_profile
    book, records, profiles = tmp_path / "play.yml", tmp_path / "tasks.jsonl", tmp_path / "profiles"
    book.write_text(TASKS_PLAYBOOK)
    profiles.mkdir()
    result = run_playbook(book, env={"ANSIBLE_CALLBACK_PLUGINS": str(common.REPO / "benchmarks" / "callbacks"),
                                     "ANSIBLE_CALLBACKS_ENABLED": common.TASK_CALLBACK,
                                     "CPUINFER_TASK_CPU_FILE": str(records), "CPUINFER_TASK_PROFILE_DIR": str(profiles)})
    assert result.returncode == 0, result.stdout + result.stderr
    lines = [common.json.loads(line) for line in records.read_text().splitlines()]
    assert [(r["host"], r["task"], r["action"]) for r in lines] == [
        ("localhost", "Set one", "ansible.builtin.set_fact"), ("localhost", "Skipped", "ansible.builtin.debug"),
        ("localhost", "Run a command", "ansible.builtin.command")]
    assert all(r["user"] + r["sys"] > 0 for r in lines) and lines[2]["children_user"] + lines[2]["children_sys"] > 0
    stats, workers = worker_profile.summed(profiles)
    assert 1 <= workers <= 3  # the last task's dump may be cut short when the play ends
    assert "| function | calls | cumulative s | own s |" in worker_profile.table(stats, workers, 5)
