"""The file sets metrics and slo_governor hand to managed_files: every host path gets the exact text of
its source in the collection (a lookup that strips the last newline or reads the wrong file would
show here, not only in a VM)."""

import json
from pathlib import Path

import pytest

from local_playbook import run_playbook

REPO = Path(__file__).resolve().parents[3]

PLAYBOOK = """
- hosts: localhost
  connection: local
  gather_facts: false
  vars_files:
    - {vars_file}
  vars:
    role_path: {role}
  tasks:
    - name: The role's file set
      ansible.builtin.copy:
        content: "{{{{ {variable} | to_json }}}}"
        dest: {out}
"""

CASES = {
    "metrics": ("__metrics_program_files", {
        "/usr/local/lib/cpuinfer-metrics/cpuinfer_metrics.py": "roles/metrics/files/cpuinfer_metrics.py",
        "/usr/local/lib/cpuinfer-metrics/stream_probe.py": "roles/health_gate/files/stream_probe.py",
        "/usr/local/lib/cpuinfer-metrics/ansible_collections/cpuinfer/llm/plugins/module_utils/_knobs.py":
            "plugins/module_utils/_knobs.py",
    }),
    "slo_governor": ("__slo_governor_program_files", {
        "/usr/local/lib/cpuinfer-slo-governor/cpuinfer_slo_governor.py": "roles/slo_governor/files/cpuinfer_slo_governor.py",
        "/usr/local/lib/cpuinfer-slo-governor/stream_probe.py": "roles/health_gate/files/stream_probe.py",
    }),
}


@pytest.mark.parametrize("role", sorted(CASES))
def test_each_host_file_is_its_source_verbatim(tmp_path, role):
    variable, expected = CASES[role]
    out = tmp_path / "files.json"
    book = tmp_path / "play.yml"
    book.write_text(PLAYBOOK.format(vars_file=REPO / "roles" / role / "vars" / "main.yml", role=REPO / "roles" / role,
                                    variable=variable, out=out))
    result = run_playbook(book)
    assert result.returncode == 0, result.stdout + result.stderr
    files = {entry["path"]: entry["content"] for entry in json.loads(out.read_text())}
    for path, source in expected.items():
        assert files[path] == (REPO / source).read_text(), path
    if role == "metrics":
        helpers = [p for p in files if "/module_utils/" in p]
        assert len(helpers) == 9 and all(files[p] == (REPO / "plugins/module_utils" / Path(p).name).read_text()
                                         for p in helpers)
