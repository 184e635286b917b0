"""The exporter's configuration as the metrics role writes it: its variables and defaults, evaluated by
ansible-playbook, give the JSON the agent's exporter reads, numbers as numbers."""

import json
from pathlib import Path

from local_playbook import run_playbook

REPO = Path(__file__).resolve().parents[3]

PLAYBOOK = """
- hosts: localhost
  connection: local
  gather_facts: false
  vars_files:
    - {defaults}
    - {vars}
  vars:
    llama_server_instances:
      - {{name: tiny, port: 8081}}
      - {{name: py, port: 8082, engine: llama-cpp-python}}
  tasks:
    - name: The configuration text
      ansible.builtin.copy:
        content: "{{{{ __metrics_config_text }}}}"
        dest: {out}
"""


def test_the_configuration_is_the_json_the_exporter_reads(tmp_path):
    out = tmp_path / "metrics.json"
    book = tmp_path / "play.yml"
    book.write_text(PLAYBOOK.format(defaults=REPO / "roles/metrics/defaults/main.yml",
                                    vars=REPO / "roles/metrics/vars/main.yml", out=out))
    result = run_playbook(book, "-e", '{"metrics_extra_units": [{"unit": "other.service"}]}')
    assert result.returncode == 0, result.stdout + result.stderr
    config = json.loads(out.read_text())
    units = [u["unit"] for u in config["units"]]
    assert units == ["cpuinfer-llama-tiny.service", "cpuinfer-llama-py.service", "other.service"]
    assert config["units"][1]["engine"] == "llama-cpp-python"
    assert isinstance(config["interval_seconds"], int) and isinstance(config["pressure_trigger"]["stall_us"], int)
    assert isinstance(config["perf_counters"], bool) and config["textfile"].endswith("/cpuinfer.prom")
    assert out.read_text().endswith("}\n")
