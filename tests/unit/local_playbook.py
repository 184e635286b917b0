"""ansible-playbook on this machine, for tests that run a role's tasks or variables against localhost
(check mode or read-only steps only: this machine's kernel is never tuned)."""

import os
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]


def run_playbook(book, *extra, inventory="localhost,", env=None):
    env = dict(os.environ, ANSIBLE_COLLECTIONS_PATH=str(REPO / ".build" / "collections"), ANSIBLE_NOCOLOR="1",
               ANSIBLE_LOCALHOST_WARNING="false", ANSIBLE_INVENTORY_UNPARSED_WARNING="false", **(env or {}))
    return subprocess.run(["ansible-playbook", "-i", str(inventory), "-e", "ansible_python_interpreter=" + sys.executable,
                           str(book), *extra], env=env, capture_output=True, text=True, timeout=300, check=False)


ROLE_VARS_PLAYBOOK = """
- hosts: localhost
  connection: local
  gather_facts: false
  vars_files:
    - {defaults}
    - {vars}
  tasks:
    - name: The expression, as the role's variables make it
      ansible.builtin.copy:
        content: "{{{{ {expression} }}}}"
        dest: {out}
"""


def role_vars_value(tmp_path, role, expression, *extra):
    """The text of a Jinja expression over a role's defaults and vars (ansible-playbook on localhost,
    writing only below tmp_path); extra goes to ansible-playbook (e.g. -e NAME=VALUE)."""
    out, book = tmp_path / "value.txt", tmp_path / "play.yml"
    book.write_text(ROLE_VARS_PLAYBOOK.format(defaults=REPO / "roles" / role / "defaults" / "main.yml",
                                              vars=REPO / "roles" / role / "vars" / "main.yml",
                                              expression=expression, out=out))
    result = run_playbook(book, *extra)
    assert result.returncode == 0, result.stdout + result.stderr
    return out.read_text()
