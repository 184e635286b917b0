"""Where a stage's time went (cpuinfer_lab.task_times), on junit reports shaped as ansible-core writes them."""

from cpuinfer_lab import task_times

REPORT = """<?xml version="1.0" ?>
<testsuites disabled="0" errors="0" failures="0" tests="6" time="0">
  <testsuite disabled="0" errors="0" failures="0" name="converge" skipped="0" tests="6" time="0">
    <testcase classname="/tmp/x/.build/collections/ansible_collections/cpuinfer/llm/roles/llama_server/tasks/units.yml:3"
              name="[mol-1] Converge: Install the units" time="4.0"/>
    <testcase classname="/tmp/x/.build/collections/ansible_collections/cpuinfer/llm/roles/llama_server/tasks/units.yml:3"
              name="[mol-2] Converge: Install the units" time="9.5"/>
    <testcase classname="/tmp/x/roles/llama_server/tasks/restart_one.yml:8" name="[mol-1] Converge: Restart: it" time="30"/>
    <testcase classname="/tmp/x/roles/llama_server/tasks/restart_one.yml:8" name="[mol-1] Converge: Restart: it" time="20"/>
    <testcase classname="/tmp/x/molecule/fleet/converge.yml:7" name="[localhost] Put: Release one" time="100"/>
    <testcase classname="/var/lib/cpuinfer-lab/play.yml:2" name="odd name" time="1.5"/>
  </testsuite>
</testsuites>
"""


def test_hosts_of_one_run_count_once_and_runs_of_one_task_add_up(tmp_path):
    (tmp_path / "converge-1.xml").write_text(REPORT)
    rows = task_times.task_times(tmp_path)
    assert rows == [
        (100.0, "molecule/fleet/converge.yml:7", "Release one", 1),
        # the same host twice in a row is a second run (an include per item), not a second host
        (50.0, "roles/llama_server/tasks/restart_one.yml:8", "Restart: it", 2),
        (9.5, "roles/llama_server/tasks/units.yml:3", "Install the units", 1),
        (1.5, "/var/lib/cpuinfer-lab/play.yml:2", "odd name", 1),
    ]


def test_two_playbook_runs_add_up_and_the_report_names_the_slowest(tmp_path, capsys):
    (tmp_path / "converge-1.xml").write_text(REPORT)
    (tmp_path / "idempotence-2.xml").write_text(REPORT)
    assert task_times.main([str(tmp_path), "--top", "2"]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert lines[0].startswith("slowest tasks (wall seconds over 4 tasks, 322 s in all")
    assert lines[1:] == ["  200.0  molecule/fleet/converge.yml:7 Release one (2 runs)",
                         "  100.0  roles/llama_server/tasks/restart_one.yml:8 Restart: it (4 runs)"]


def test_no_reports_say_so_rather_than_fail(tmp_path, capsys):
    assert task_times.main([str(tmp_path)]) == 0
    assert "over 0 tasks" in capsys.readouterr().out
