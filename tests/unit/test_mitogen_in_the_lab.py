"""Mitogen as the lab's connection for the scenarios that do not test the connection path: the plugin path they
name exists (scripts/bootstrap links it), the ones that do test it stay on the stock connection, and our
modules behave the same in Mitogen's persistent interpreter - where module-level state outlives a task."""

import glob

import yaml

from kernel_tree import THP, thp_tree
from local_playbook import REPO, run_playbook

# The connection path is what these test: a host's first converge and check mode as users run them (default),
# reboots and reconnecting after them (kernel, isolation).
STOCK = {"default", "kernel", "isolation"}
PLUGINS = "${MOLECULE_PROJECT_DIRECTORY}/.build/mitogen-strategy"


def scenario_envs():
    found = {}
    for path in glob.glob(str(REPO / "molecule" / "*" / "molecule.yml")):
        with open(path, encoding="utf-8") as handle:
            config = yaml.safe_load(handle)
        found[path.split("/")[-2]] = (config.get("provisioner") or {}).get("env") or {}
    return found


def test_the_scenarios_through_mitogen_name_the_plugins_bootstrap_links():
    envs = scenario_envs()
    through = {name for name, env in envs.items() if env.get("ANSIBLE_STRATEGY") == "mitogen_linear"}
    assert through and not through & STOCK, through
    for name in through:
        assert envs[name]["ANSIBLE_STRATEGY_PLUGINS"] == PLUGINS, name
        # Mitogen's ssh does not take StrictHostKeyChecking=no from ansible_ssh_common_args
        assert str(envs[name]["ANSIBLE_HOST_KEY_CHECKING"]).lower() == "false", name
    assert (REPO / ".build" / "mitogen-strategy" / "mitogen_linear.py").is_file()
    assert all("ANSIBLE_STRATEGY" not in envs[name] for name in STOCK)


PLAY = """
- hosts: localhost
  connection: local
  gather_facts: false
  tasks:
    - name: THP on the first tree
      cpuinfer.llm.thp:
        enabled: madvise
        root: {first}
      register: first
    - name: The tree shows the written choice as the kernel does
      ansible.builtin.copy:
        content: "always [madvise] never\\n"
        dest: {first}{thp}/enabled
    - name: The same again, in the same interpreter
      cpuinfer.llm.thp:
        enabled: madvise
        root: {first}
      register: again
    - name: THP on the second tree, as the first was before the first run
      cpuinfer.llm.thp:
        enabled: madvise
        root: {second}
      register: second
    - name: A bad request after them, refused before any write
      cpuinfer.llm.thp:
        enabled: never
        khugepaged:
          pages_to_scan: 0
        root: {first}
      register: refused
      ignore_errors: true
    - name: What each run reported
      ansible.builtin.copy:
        content: "{{{{ [first.changed, again.changed, second.changed, refused.failed] | to_json }}}}"
        dest: {out}
"""


def test_our_modules_keep_no_state_between_runs_in_mitogen_s_interpreter(tmp_path):
    first, second = tmp_path / "first", tmp_path / "second"
    thp_tree(first)
    thp_tree(second)
    out, book = tmp_path / "reported.json", tmp_path / "play.yml"
    book.write_text(PLAY.format(first=first, second=second, out=out, thp=THP))
    result = run_playbook(book, env={"ANSIBLE_STRATEGY": "mitogen_linear",
                                     "ANSIBLE_STRATEGY_PLUGINS": str(REPO / ".build" / "mitogen-strategy")})
    assert result.returncode == 0, result.stdout + result.stderr
    # ansible-core's notice for a strategy not its own: the play did run through Mitogen's
    assert "strategy plugins not included in ansible.builtin" in result.stdout + result.stderr
    assert out.read_text() == "[true, false, true, true]"
    # the refused request wrote nothing
    assert (first / THP.lstrip("/") / "enabled").read_text() == "always [madvise] never\n"
    assert (second / THP.lstrip("/") / "enabled").read_text() == "madvise"
