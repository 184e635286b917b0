"""cpuinfer.llm.role_template: the text ansible.builtin.template's lookup gives, without its copy of every variable."""

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))
from local_playbook import run_playbook  # noqa: E402

# what the roles' unit templates use: ansible_managed, variables made of variables, control blocks, a '\n' in a
# string literal, a backslash written in the text, trailing newlines
TEMPLATE = """# {{ ansible_managed }}
[Service]
ExecStart=/bin/echo {{ greeting }} {{ template_path }}
{% if numbers | length > 1 %}
Environment=JOINED={{ numbers | join('\\n') | replace('\\n', ',') }}
{% endif %}
Literal=a\\b
{{ lines | join('\\n') }}

"""

PLAYBOOK = """
- hosts: localhost
  connection: local
  gather_facts: false
  vars:
    name: world
    greeting: "hello {{ name }}"
    numbers: [1, 2, 3]
    lines: [one, two]
  tasks:
    - name: Both lookups' texts
      ansible.builtin.copy:
        content: "{{ lookup(item.lookup, 'unit.j2') }}"
        dest: "{{ playbook_dir }}/{{ item.out }}"
        mode: "0644"
      loop:
        - {lookup: ansible.builtin.template, out: builtin.txt}
        - {lookup: cpuinfer.llm.role_template, out: ours.txt}
"""


def test_the_text_is_the_builtin_lookups(tmp_path):
    (tmp_path / "templates").mkdir()
    (tmp_path / "templates" / "unit.j2").write_text(TEMPLATE)
    (tmp_path / "play.yml").write_text(PLAYBOOK)
    result = run_playbook(tmp_path / "play.yml")
    assert result.returncode == 0, result.stdout + result.stderr
    ours = (tmp_path / "ours.txt").read_text()
    assert ours == (tmp_path / "builtin.txt").read_text()
    assert ours.startswith("# Ansible managed\n[Service]\nExecStart=/bin/echo hello world unit.j2\n")
    assert "Environment=JOINED=1,2,3\n" in ours and "Literal=a\\b\n" in ours and ours.endswith("one\ntwo\n\n")


def test_a_missing_template_is_an_error_naming_it(tmp_path):
    (tmp_path / "play.yml").write_text(PLAYBOOK.replace("ansible.builtin.template, out: builtin.txt", "cpuinfer.llm.role_template, out: x.txt"))
    result = run_playbook(tmp_path / "play.yml")
    assert result.returncode != 0
    assert "the template file unit.j2 could not be found" in result.stdout + result.stderr
