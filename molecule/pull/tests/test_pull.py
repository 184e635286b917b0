"""After converge.yml's story: both hosts converged by their own timers, a change reached the canary first and the
stable host only once promoted, a change the canary failed was not promoted. The story's evidence is in
pull-story.json (converge.yml); the hosts' state is read here."""

import json
import os
import re

import pytest

STORY_FILE = os.path.join(os.environ.get("MOLECULE_EPHEMERAL_DIRECTORY", "."), "pull-story.json")
UNIT = "cpuinfer-llama-tiny-llama.service"


@pytest.fixture(scope="module")
def story():
    with open(STORY_FILE, encoding="utf-8") as handle:
        return json.load(handle)


def samples(text):
    """{(name, ((label, value), ...)): value} of a textfile."""
    found = {}
    for line in text.splitlines():
        match = re.match(r"^([a-z_]+)(?:\{(.*)\})? (\S+)$", line)
        if match:
            labels = tuple(sorted(re.findall(r'(\w+)="([^"]*)"', match.group(2) or "")))
            found[(match.group(1), labels)] = float(match.group(3))
    return found


def test_the_first_pull_of_a_host_the_controller_converged_changes_nothing(story):
    for name, state in story["first_pull"].items():
        assert state["converged"]["commit"] == story["commits"]["first"], name
        assert state["playbook"]["succeeded"], name
        assert state["playbook"]["tasks"]["changed"] == 0, (name, state["playbook"]["tasks"])
        assert state["playbook"]["tasks"]["ok"] > 20, (name, state["playbook"]["tasks"])


def test_the_role_changes_nothing_the_second_time(story):
    assert len(story["enable_again_recap"]) == 3  # localhost and both hosts
    assert all("changed=0" in line for line in story["enable_again_recap"]), story["enable_again_recap"]


def test_the_change_reached_the_canary_and_the_stable_host_waited_for_the_promotion(story):
    assert story["weights_before_promotion"] == {"mol-pull-1": "150", "mol-pull-2": "100"}
    waited = story["stable_after_push"]
    assert waited["run"]["time"] > story["stable_clock_at_push"]
    assert waited["run"]["commit"] == waited["converged"]["commit"] == story["commits"]["first"]


def test_a_change_the_canary_failed_was_not_promoted(story):
    assert any("did not converge %s" % story["commits"]["bad"] in line for line in story["refused"]), story["refused"]
    assert story["stable_ref_after_refusal"] == story["commits"]["change"]


def test_each_run_is_in_the_journal_and_the_textfile(story, host):
    name = host.backend.get_hostname()
    journal, exported = story["journals"][name], samples(story["textfiles"][name])
    assert "cpuinfer-pull-run: exit 0, converged %s" % story["commits"]["change"] in journal
    assert "Repository has not changed, quitting" in journal
    converged = [labels for (metric, labels) in exported if metric == "cpuinfer_pull_converged_info"]
    assert converged == [(("commit", story["commits"]["change"]), ("ref", "pull/canary" if name == "mol-pull-1" else "pull/stable"))]
    assert exported[("cpuinfer_pull_interval_seconds", ())] == 60
    assert exported[("cpuinfer_pull_run_success", ())] == (0 if name == "mol-pull-1" else 1)  # the canary's last run failed
    # the series CpuinferPullStale reads: a success on record even where the last run failed
    assert 0 < exported[("cpuinfer_pull_last_success_timestamp_seconds", ())] <= exported[("cpuinfer_pull_run_timestamp_seconds", ())]


def test_the_hosts_run_the_promoted_change_and_keep_pulling(host, story):
    assert host.check_output("systemctl show --property=CPUWeight --value %s" % UNIT) == "150"
    assert host.service(UNIT).is_running
    timer = host.service("cpuinfer-pull.timer")
    assert timer.is_enabled and timer.is_running
    with host.sudo():
        state = json.loads(host.file("/var/lib/cpuinfer/pull/state.json").content_string)
    assert state["converged"]["commit"] == story["commits"]["change"]
