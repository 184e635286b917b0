"""host_tuning's paths that name files a module owns must stay the module's own."""

import json
from pathlib import Path

import yaml

from ansible_collections.cpuinfer.llm.plugins.module_utils import _irq

from local_playbook import run_playbook

VARS = Path(__file__).resolve().parents[3] / "roles" / "host_tuning" / "vars" / "main.yml"


def test_revert_removes_the_irq_modules_own_record():
    assert yaml.safe_load(VARS.read_text())["__host_tuning_irq_record"] == _irq.UNMOVABLE_RECORD


FILES_PLAYBOOK = """
- hosts: localhost
  connection: local
  gather_facts: false
  vars_files:
    - {vars_file}
  vars:
    host_tuning_cpu_plan: {{split: true, housekeeping: "0", inference: "1-3"}}
    host_tuning_inference_slice: cpuinfer-inference.slice
    host_tuning_cpu_governor: performance
    host_tuning_irq_affinity: true
    host_tuning_irq_interval: 10
    host_tuning_cpu_epp: performance
    host_tuning_cpu_dma_latency_us: 2
    host_tuning_isolation: nohz
    host_tuning_isolation_isolcpus_flags: []
    host_agent_current_bin: /opt/cpuinfer/agent/current/bin
    ansible_facts: {{cpuinfer: {{cpufreq_governor: schedutil, cpufreq_epp: balance_performance}}}}
  tasks:
    - name: The files settings.yml hands to kernel_settings
      ansible.builtin.copy:
        content: >-
          {{{{ (__host_tuning_slice_files + __host_tuning_governor_files + __host_tuning_workqueue_files
               + __host_tuning_latency_files) | to_json }}}}
        dest: {out}
      vars:
        role_path: {role}
"""


def test_the_files_the_role_writes_are_lines_not_escapes(tmp_path):
    """Ansible's Jinja keeps '\\n' in a string literal as two characters: a drop-in built that way is
    one line systemd ignores (the default scenario's drift check found it)."""
    out = tmp_path / "files.json"
    book = tmp_path / "play.yml"
    book.write_text(FILES_PLAYBOOK.format(vars_file=VARS, out=out, role=VARS.parents[1]))
    (tmp_path / "templates").symlink_to(VARS.parents[1] / "templates")  # the role's, for its template lookups
    result = run_playbook(book)
    assert result.returncode == 0, result.stdout + result.stderr
    files = {entry["path"]: entry["content"] for entry in json.loads(out.read_text())}
    assert files["/etc/systemd/system/cpuinfer-inference.slice.d/50-cpuinfer-cpus.conf"].endswith(
        "\n[Slice]\nAllowedCPUs=1-3\n")
    assert files["/etc/systemd/system/system.slice.d/50-cpuinfer-housekeeping.conf"].endswith("\n[Slice]\nAllowedCPUs=0\n")
    assert files["/etc/tmpfiles.d/cpuinfer-governor.conf"].endswith(
        "scaling_governor - - - - performance\nw /sys/devices/system/cpu/cpu*/cpufreq/energy_performance_preference - - - - performance\n")
    assert files["/etc/tmpfiles.d/cpuinfer-workqueue.conf"].endswith("\nw /sys/devices/virtual/workqueue/cpumask - - - - 1\n")
    assert files["/var/lib/cpuinfer/cpu-dma-latency-us"].endswith("\n2\n")
    assert "ExecStart=/opt/cpuinfer/agent/current/bin/cpuinfer-hold-latency 2\n" in files[
        "/etc/systemd/system/cpuinfer-cpu-dma-latency.service"]
    assert all("\\n" not in text for text in files.values()), files
