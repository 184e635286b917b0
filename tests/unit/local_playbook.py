"""ansible-playbook on this machine, for tests that run a role's tasks or variables against localhost
(check mode or read-only steps only: this machine's kernel is never tuned)."""

import os
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]


def run_playbook(book, *extra, inventory="localhost,"):
    env = dict(os.environ, ANSIBLE_COLLECTIONS_PATH=str(REPO / ".build" / "collections"), ANSIBLE_NOCOLOR="1",
               ANSIBLE_LOCALHOST_WARNING="false", ANSIBLE_INVENTORY_UNPARSED_WARNING="false")
    return subprocess.run(["ansible-playbook", "-i", str(inventory), "-e", "ansible_python_interpreter=" + sys.executable,
                           str(book), *extra], env=env, capture_output=True, text=True, timeout=300, check=False)
