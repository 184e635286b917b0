"""Mitogen, the opt-in connection layer `benchmarks/run converge` measures: the strategy plugins' path it and
docs/rollout.md name exists (scripts/bootstrap links it), and our modules behave the same in Mitogen's persistent
interpreter - where module-level state outlives a task."""

import glob

import yaml

from kernel_tree import THP, thp_tree
from local_playbook import REPO, run_playbook


def test_bootstrap_links_the_strategy_plugins_and_no_scenario_runs_through_them():
    assert (REPO / ".build" / "mitogen-strategy" / "mitogen_linear.py").is_file()
    # CI's scenarios stay on the stock connection: Mitogen hung a task of molecule/fleet's rollout once
    # (docs/lab.md, "Mitogen in the lab"), and a stage that can hang costs CI more than Mitogen saves it
    for path in glob.glob(str(REPO / "molecule" / "*" / "molecule.yml")):
        with open(path, encoding="utf-8") as handle:
            env = (yaml.safe_load(handle).get("provisioner") or {}).get("env") or {}
        assert "ANSIBLE_STRATEGY" not in env, path


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
