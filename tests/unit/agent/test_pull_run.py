"""The pull mode's runner: when it asks ansible-pull to skip an unchanged repository, what it keeps and exports."""

import json
import subprocess
import sys

import pytest
from prometheus_client.parser import text_string_to_metric_families

from cpuinfer_agent import pull_run

RECAP = "lab-xeon-1                 : ok=%d   changed=%d   unreachable=0    failed=%d    skipped=3    rescued=0    ignored=0"


@pytest.fixture
def checkout(tmp_path):
    """A git checkout with one commit; -> (path, commit)."""
    path = tmp_path / "checkout"
    path.mkdir()
    env = {"GIT_AUTHOR_NAME": "t", "GIT_AUTHOR_EMAIL": "t@example.invalid", "GIT_COMMITTER_NAME": "t",
           "GIT_COMMITTER_EMAIL": "t@example.invalid", "HOME": str(tmp_path), "PATH": "/usr/bin:/bin"}
    for argv in (["init", "-q"], ["commit", "-q", "--allow-empty", "-m", "one"]):
        subprocess.run(["git", "-C", str(path)] + argv, check=True, env=env)
    commit = subprocess.run(["git", "-C", str(path), "rev-parse", "HEAD"], capture_output=True, text=True,
                            check=True).stdout.strip()
    return str(path), commit


@pytest.fixture
def fake_pull(tmp_path):
    """A stand-in ansible-pull printing `output` and exiting `status`; -> set(output, status), its argv file."""
    script, argv_file = tmp_path / "ansible-pull", tmp_path / "argv"
    plan = tmp_path / "plan.json"

    def set_plan(output, status=0):
        plan.write_text(json.dumps({"output": output, "status": status}))

    script.write_text("#!%s\nimport json, sys\nopen(%r, 'w').write(json.dumps(sys.argv[1:]))\nplan = json.load(open(%r))\n"
                      "print(plan['output'])\nsys.exit(plan['status'])\n" % (sys.executable, str(argv_file), str(plan)))
    script.chmod(0o755)
    set_plan("")
    return set_plan, argv_file, str(script)


def run(tmp_path, checkout_dir, script, *extra):
    argv = ["--textfile", str(tmp_path / "textfile" / "pull.prom"), "--state", str(tmp_path / "state" / "pull.json"),
            "--checkout", checkout_dir, "--ref", "pull/canary", "--interval", "900"] + list(extra) + ["--", script, "-U", "x"]
    return pull_run.main(argv)


def metrics(tmp_path):
    text = (tmp_path / "textfile" / "pull.prom").read_text()
    return dict(((sample.name, tuple(sorted(sample.labels.items()))), sample.value)
                for family in text_string_to_metric_families(text) for sample in family.samples)


def test_a_first_run_converges_and_exports_the_commit(tmp_path, checkout, fake_pull):
    set_plan, argv_file, script = fake_pull
    set_plan("PLAY RECAP ***\n" + RECAP % (40, 2, 0))
    assert run(tmp_path, checkout[0], script) == 0
    assert json.loads(argv_file.read_text()) == ["-U", "x"]  # no state yet: no --only-if-changed
    seen = metrics(tmp_path)
    assert seen[("cpuinfer_pull_converged_info", (("commit", checkout[1]), ("ref", "pull/canary")))] == 1
    assert seen[("cpuinfer_pull_playbook_tasks", (("result", "changed"),))] == 2
    assert seen[("cpuinfer_pull_playbook_tasks", (("result", "ok"),))] == 40
    assert seen[("cpuinfer_pull_run_success", ())] == 1
    assert seen[("cpuinfer_pull_interval_seconds", ())] == 900


def test_after_a_success_an_unchanged_repository_is_skipped_and_the_converged_commit_kept(tmp_path, checkout, fake_pull):
    set_plan, argv_file, script = fake_pull
    set_plan(RECAP % (40, 2, 0))
    run(tmp_path, checkout[0], script)
    first = metrics(tmp_path)
    set_plan("Repository has not changed, quitting: b''")
    assert run(tmp_path, checkout[0], script) == 0
    assert json.loads(argv_file.read_text()) == ["-U", "x", "--only-if-changed"]
    second = metrics(tmp_path)
    assert second[("cpuinfer_pull_playbook_timestamp_seconds", ())] == first[("cpuinfer_pull_playbook_timestamp_seconds", ())]
    assert second[("cpuinfer_pull_run_timestamp_seconds", ())] > first[("cpuinfer_pull_run_timestamp_seconds", ())]
    assert second[("cpuinfer_pull_converged_info", (("commit", checkout[1]), ("ref", "pull/canary")))] == 1


def test_a_failed_converge_is_retried_without_only_if_changed_and_converged_nothing(tmp_path, checkout, fake_pull):
    set_plan, argv_file, script = fake_pull
    set_plan(RECAP % (12, 1, 1), status=2)
    assert run(tmp_path, checkout[0], script) == 2
    seen = metrics(tmp_path)
    assert seen[("cpuinfer_pull_run_success", ())] == 0
    assert seen[("cpuinfer_pull_playbook_success", ())] == 0
    assert seen[("cpuinfer_pull_playbook_tasks", (("result", "failed"),))] == 1
    assert not any(name == "cpuinfer_pull_converged_info" for name, labels in seen)
    assert not any(name == "cpuinfer_pull_last_success_timestamp_seconds" for name, labels in seen)
    run(tmp_path, checkout[0], script)
    assert "--only-if-changed" not in json.loads(argv_file.read_text())


def test_a_full_run_comes_back_after_full_every(tmp_path, checkout, fake_pull):
    set_plan, argv_file, script = fake_pull
    set_plan(RECAP % (40, 0, 0))
    run(tmp_path, checkout[0], script)
    run(tmp_path, checkout[0], script, "--full-every", "0")
    assert "--only-if-changed" not in json.loads(argv_file.read_text())


def test_a_command_that_cannot_start_is_a_failed_run_on_record(tmp_path, checkout):
    assert run(tmp_path, checkout[0], str(tmp_path / "missing-ansible-pull")) == 127
    assert metrics(tmp_path)[("cpuinfer_pull_run_success", ())] == 0


def test_no_checkout_yet_exports_no_commit(tmp_path, fake_pull):
    set_plan, script = fake_pull[0], fake_pull[2]
    set_plan("fatal: unable to access the repository", status=1)
    assert run(tmp_path, str(tmp_path / "nothing"), script) == 1
    assert not any(name in ("cpuinfer_pull_checkout_info", "cpuinfer_pull_converged_info") for name, labels in metrics(tmp_path))


def test_the_recap_is_summed_over_its_hosts_and_an_unreadable_state_is_no_state(tmp_path):
    seen = pull_run.outcome(["PLAY RECAP", RECAP % (3, 1, 0), RECAP % (4, 0, 1)])
    assert seen == {"ran": True, "tasks": {"ok": 7, "changed": 1, "unreachable": 0, "failed": 1, "skipped": 6,
                                           "rescued": 0, "ignored": 0}}
    (tmp_path / "state.json").write_text("{not json")
    assert pull_run.read_state(str(tmp_path / "state.json")) == {}
    assert pull_run.command_for(["ansible-pull"], {}, 0, 10) == ["ansible-pull"]
