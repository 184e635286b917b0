"""site.yml's first step, playbooks/tasks/learn_and_group.yml, on this machine (host_facts only reads):
a profile in group_vars/cpuinfer_<platform>.yml and one in cpuinfer_<build class>.yml reach the host
in the same play, with no group made by hand in the inventory."""

import json
from pathlib import Path

from ansible_collections.cpuinfer.llm.plugins.plugin_utils._filter_cpus import fact_groups
from ansible_collections.cpuinfer.llm.plugins.modules import host_facts

from local_playbook import run_playbook

REPO = Path(__file__).resolve().parents[3]

PLAYBOOK = """
- hosts: all
  gather_facts: false
  pre_tasks:
    - name: Learn and group
      ansible.builtin.include_tasks: {tasks}
  tasks:
    - name: What the profiles gave
      ansible.builtin.copy:
        content: "{{{{ {{'platform': platform_profile | default('unset'), 'class': class_profile | default('unset'),
                       'groups': group_names}} | to_json }}}}"
        dest: {out}
"""


def test_profiles_by_platform_and_build_class_apply(tmp_path, run_module):
    failed, result = run_module(host_facts, {})
    assert not failed, result
    platform_group, class_group = fact_groups(result["ansible_facts"]["cpuinfer"])
    inventory = tmp_path / "inventory"
    (inventory / "group_vars").mkdir(parents=True)
    (inventory / "hosts.yml").write_text("all:\n  hosts:\n    this-machine:\n      ansible_connection: local\n")
    (inventory / "group_vars" / (platform_group + ".yml")).write_text("platform_profile: applied\n")
    (inventory / "group_vars" / (class_group + ".yml")).write_text("class_profile: applied\n")
    out = tmp_path / "seen.json"
    book = tmp_path / "play.yml"
    book.write_text(PLAYBOOK.format(tasks=REPO / "playbooks" / "tasks" / "learn_and_group.yml", out=out))
    proc = run_playbook(book, inventory=inventory)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    seen = json.loads(out.read_text())
    assert seen["platform"] == "applied" and seen["class"] == "applied", seen
    assert platform_group in seen["groups"] and class_group in seen["groups"]
