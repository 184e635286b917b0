"""The pull mode's settings: every problem said at once, the Python ansible-pull needs, the unit's command."""

import pytest
from ansible.errors import AnsibleFilterError

from ansible_collections.cpuinfer.llm.plugins.plugin_utils._filter_pull import controller_python_minimum, pull_command, pull_problems

GOOD = {"url": "git://10.0.2.2:9418/fleet.git", "ref": "pull/canary", "inventory": "inventories/fleet/hosts.yml",
        "playbook": "playbooks/pull.yml", "host": "xeon-1", "python": "3.11", "interval": 900, "random_delay": 300,
        "full_every": 86400}
PATHS = {"runner": "/opt/cpuinfer/agent/current/bin/cpuinfer-pull-run", "ansible_pull": "/opt/cpuinfer/pull/venvs/current/bin/ansible-pull",
         "checkout": "/var/lib/cpuinfer/pull/checkout", "state": "/var/lib/cpuinfer/pull/state.json",
         "textfile": "/var/lib/prometheus/node-exporter/cpuinfer-pull.prom", "extra_vars": "/etc/cpuinfer/pull-vars.json"}


def test_the_minimum_is_the_installed_ansible_cores_controller_minimum():
    assert controller_python_minimum() == (3, 11)  # ansible-core 2.19's Requires-Python


def test_good_settings_have_no_problem():
    assert pull_problems(GOOD) == []
    assert pull_problems(dict(GOOD, python="3.12")) == []


@pytest.mark.parametrize("python, host", [("3.10", "Ubuntu 22.04"), ("3.9", "openEuler 22.03, RHEL 9"), ("", "none found")])
def test_a_python_below_the_controller_minimum_is_refused_naming_both(python, host):
    problems = pull_problems(dict(GOOD, python=python))
    assert len(problems) == 1, host
    assert problems[0].startswith("the host runs Python %s, but ansible-pull runs ansible-core " % (python or "(none found)"))
    assert "needs Python 3.11 or later" in problems[0]


def test_every_problem_is_said_at_once():
    problems = pull_problems(dict(GOOD, url="", ref="pull canary", inventory="/etc/hosts.yml", playbook="../x.yml",
                                  interval=30, random_delay=-1, full_every="daily", python="3.9"))
    assert len(problems) == 8, problems
    joined = "\n".join(problems)
    for expected in ("url ''", "ref 'pull canary'", "inventory '/etc/hosts.yml' must be a path inside the checkout",
                     "playbook '../x.yml' must be", "interval 30", "random_delay -1", "full_every 'daily'", "Python 3.9"):
        assert expected in joined


@pytest.mark.parametrize("word", ["a%b", "a$b", "a'b", 'a"b', "a\\b", "a b", "a;b"])
def test_what_systemd_or_a_shell_would_read_otherwise_is_no_word(word):
    assert any(problem.startswith("url") for problem in pull_problems(dict(GOOD, url=word)))


def test_the_command_runs_ansible_pull_under_the_runner_for_this_host_alone():
    words = pull_command(GOOD, PATHS).split(" ")
    assert words[0] == PATHS["runner"]
    assert words[words.index("--") + 1] == PATHS["ansible_pull"]
    pull = words[words.index("--") + 1:]
    assert pull[pull.index("--limit") + 1] == "xeon-1"
    assert pull[pull.index("--checkout") + 1] == "pull/canary"
    assert pull[pull.index("--inventory") + 1] == "inventories/fleet/hosts.yml"
    assert pull[pull.index("--extra-vars") + 1] == "@/etc/cpuinfer/pull-vars.json"
    assert pull[-1] == "playbooks/pull.yml"
    runner = words[:words.index("--")]
    assert runner[runner.index("--interval") + 1] == "900" and runner[runner.index("--ref") + 1] == "pull/canary"


def test_the_command_refuses_what_would_break_it():
    with pytest.raises(AnsibleFilterError, match="ref 'a b'"):
        pull_command(dict(GOOD, ref="a b"), PATHS)
    with pytest.raises(AnsibleFilterError, match="checkout 'relative'"):
        pull_command(GOOD, dict(PATHS, checkout="relative"))
