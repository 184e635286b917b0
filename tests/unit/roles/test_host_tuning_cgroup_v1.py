"""host_tuning on a host that boots cgroup v1 or hybrid: without reboot_ok the host fails with the
reason (so a canary halts); with allow_pending_reboot it is left pending. Runs the role's own task
file with ansible-playbook against localhost in check mode, with the facts of such a host."""

import json

import pytest

from local_playbook import run_playbook

PLAYBOOK = """
- hosts: localhost
  connection: local
  gather_facts: false
  check_mode: true
  vars:
    host_tuning_reboot_ok: false
  tasks:
    - name: A host whose facts say cgroup {version}
      ansible.builtin.set_fact:
        ansible_facts:
          cpuinfer: {{cgroup: {{version: {version}}}}}
    - name: The role's hierarchy step
      ansible.builtin.include_role:
        name: cpuinfer.llm.host_tuning
        tasks_from: cgroup2
    - name: Reached only when the host was let through
      ansible.builtin.debug:
        msg: REACHED
"""


def run(tmp_path, version, *extra):
    book = tmp_path / "play.yml"
    book.write_text(PLAYBOOK.format(version=json.dumps(version)))
    return run_playbook(book, *extra)


@pytest.mark.parametrize("version", [1, "hybrid"])
def test_a_v1_host_fails_with_the_reason(tmp_path, version):
    result = run(tmp_path, version)
    assert result.returncode != 0
    assert "not the unified" in result.stdout and "host_tuning_reboot_ok=true" in result.stdout
    assert "REACHED" not in result.stdout


def test_allow_pending_reboot_leaves_it_pending_without_failing(tmp_path):
    result = run(tmp_path, 1, "-e", "host_tuning_allow_pending_reboot=true")
    assert result.returncode == 0, result.stdout
    assert "REACHED" not in result.stdout  # end_host: nothing below ran on it


def test_a_v2_host_goes_on(tmp_path):
    result = run(tmp_path, 2)
    assert result.returncode == 0 and "REACHED" in result.stdout, result.stdout
