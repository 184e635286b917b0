"""The health gate measures a failing host again before it fails it (health_gate_attempts), and never
measures again what a probe could not measure. Runs the role against localhost with a fake probe that
answers from a list of measurements, one per call."""

import json

from local_playbook import run_playbook

PLAYBOOK = """
- hosts: localhost
  connection: local
  gather_facts: false
  vars:
    host_agent_bin: {bin}
    health_gate_baseline: {{tiny: {{tokens_per_second: 50.0, p99_ms: 20.0}}}}
    health_gate_expected_instances: [tiny]
  tasks:
    - name: The gate
      ansible.builtin.include_role:
        name: cpuinfer.llm.health_gate
    - name: Reached only when the gate passed
      ansible.builtin.debug:
        msg: REACHED
"""

PROBE = """#!/bin/sh
count=$(cat {calls} 2>/dev/null || echo 0)
echo $((count + 1)) > {calls}
case $((count + 1)) in
{cases}
  *) echo "no measurement left" >&2; exit 3 ;;
esac
"""

SLOW, STEADY = 10.0, 48.0


def run(tmp_path, rates, *extra):
    """Run the gate with a probe whose Nth call measures rates[N-1] tokens/s (None: the probe fails);
    (ansible-playbook's result, how many times the probe ran)."""
    cases = "\n".join(
        "  %d) echo 'connection refused' >&2; exit 1 ;;" % (index + 1) if rate is None else
        "  %d) echo '%s' ;;" % (index + 1, json.dumps({"tiny": {"tokens_per_second": rate, "p99_ms": 21.0}}))
        for index, rate in enumerate(rates))
    calls = tmp_path / "calls"
    probe = tmp_path / "cpuinfer-stream-probe"
    probe.write_text(PROBE.format(calls=calls, cases=cases))
    probe.chmod(0o755)
    book = tmp_path / "play.yml"
    book.write_text(PLAYBOOK.format(bin=tmp_path))
    result = run_playbook(book, *extra)
    return result, int(calls.read_text())


def test_a_slow_first_measurement_is_measured_again_and_passes(tmp_path):
    result, calls = run(tmp_path, [SLOW, STEADY])
    assert result.returncode == 0 and "REACHED" in result.stdout, result.stdout
    assert calls == 2
    assert "tiny: 48 tokens/s" in result.stdout and "(measured 2 times; the verdict is the last)" in result.stdout


def test_a_regression_fails_every_measurement_and_the_host(tmp_path):
    result, calls = run(tmp_path, [SLOW, SLOW, STEADY], "-e", "health_gate_attempts=2")
    assert result.returncode != 0 and "REACHED" not in result.stdout
    assert calls == 2
    assert "rate below 0.90 x its baseline" in result.stdout
    assert "(measured 2 times; the verdict is the last)" in result.stdout


def test_one_attempt_fails_on_the_first_measurement(tmp_path):
    result, calls = run(tmp_path, [SLOW, STEADY], "-e", "health_gate_attempts=1")
    assert result.returncode != 0 and "REACHED" not in result.stdout
    assert calls == 1 and "rate below 0.90 x its baseline" in result.stdout
    assert "measured" not in result.stdout.split("TASK [cpuinfer.llm.health_gate : The gate]")[-1]


def test_a_passing_host_is_measured_once(tmp_path):
    result, calls = run(tmp_path, [STEADY, SLOW])
    assert result.returncode == 0 and calls == 1, result.stdout


def test_a_probe_that_could_not_measure_fails_at_once(tmp_path):
    result, calls = run(tmp_path, [None, STEADY], "-e", "health_gate_attempts=3")
    assert result.returncode != 0 and "REACHED" not in result.stdout
    assert calls == 1 and "connection refused" in result.stdout
