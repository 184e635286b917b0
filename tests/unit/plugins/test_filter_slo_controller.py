"""slo_controller's configuration filter."""

import pytest

from ansible.errors import AnsibleFilterError
from ansible_collections.cpuinfer.llm.plugins.plugin_utils._filter_slo_controller import slo_controller_config

FACTS = {"core_cpus": ["0,4", "1,5", "2,6", "3,7"], "numa_nodes": [{"id": 0, "cpus": "0-7"}], "l3_domains": ["0-7"]}
INSTANCES = [{"name": "chat", "port": 8081, "parallel": 4}, {"name": "batch", "port": 8082, "best_effort": True},
             {"name": "code", "port": 8083}]


def options(**overrides):
    base = {"slice": "cpuinfer-besteffort.slice", "instances": [], "slo_p99_ms": 250, "ttft_slo_ms": 0,
            "safe_minimum_percent": 20, "step_percent": 20, "lend_cores": True, "psi_some_max": 40,
            "window_seconds": 10, "probe_interval_seconds": 2, "probe_tokens": 8, "min_interval_seconds": 20,
            "dry_run": False, "textfile_dir": "/var/lib/prometheus/node-exporter/", "probe_budget_share": 0.01,
            "decode_tokens_per_second": 12.5, "tail_factor": 1.2, "resume_seconds": 60}
    base.update(overrides)
    return base


def test_every_latency_critical_instance_is_protected_and_whole_cores_are_lendable():
    config = slo_controller_config(INSTANCES, FACTS, 1, options())
    assert [i["name"] for i in config["instances"]] == ["chat", "code"]  # the best-effort one is not protected
    assert config["instances"][0] == {"name": "chat", "unit": "cpuinfer-llama-chat.service", "port": 8081,
                                      "slo_p99_ms": 250, "ttft_slo_ms": 0, "token_capacity_per_second": 50.0}
    assert config["instances"][1]["token_capacity_per_second"] == 12.5  # one slot where parallel is not given
    assert (config["probe_budget_share"], config["tail_factor"], config["resume_seconds"]) == (0.01, 1.2, 60)
    assert config["base_cpus"] == "0,4"
    assert config["lendable_cores"] == ["3,7", "2,6", "1,5"]  # hyperthread pairs, the last core first
    assert config["textfile"] == "/var/lib/prometheus/node-exporter/cpuinfer-slo-controller.prom"


def test_named_instances_and_no_lending():
    config = slo_controller_config(INSTANCES, FACTS, 2, options(instances=["code"], lend_cores=False))
    assert [i["name"] for i in config["instances"]] == ["code"]
    assert config["base_cpus"] == "0-1,4-5" and config["lendable_cores"] == []


def test_a_host_too_small_to_split_lends_nothing():
    config = slo_controller_config(INSTANCES, {"core_cpus": ["0"], "numa_nodes": [{"id": 0, "cpus": "0"}]}, 1, options())
    assert config["base_cpus"] == "0" and config["lendable_cores"] == []


def test_every_problem_is_refused_at_once():
    with pytest.raises(AnsibleFilterError) as caught:
        slo_controller_config(INSTANCES, FACTS, 1, options(instances=["batch", "nope"], slo_p99_ms=0, probe_tokens=1,
                                                           safe_minimum_percent=500, probe_budget_share=0,
                                                           tail_factor=0.5, decode_tokens_per_second=0))
    message = str(caught.value)
    assert "'batch', which is not a latency-critical instance" in message
    assert "'nope'" in message
    assert "slo_p99_ms must be a number of at least 1, not 0" in message
    assert "probe_tokens must be at least 2" in message
    assert "probe_budget_share must be a share above 0 and at most 1, not 0" in message
    assert "tail_factor must be a number of at least 1, not 0.5" in message
    assert "decode_tokens_per_second must be a number of at least 0.001, not 0" in message
    assert "safe_minimum_percent 500 is more than best-effort work's own CPUs (0,4) can use: at most 200" in message


def test_no_instance_to_protect_is_refused():
    with pytest.raises(AnsibleFilterError, match="no latency-critical llama_server instance"):
        slo_controller_config([{"name": "batch", "port": 1, "best_effort": True}], FACTS, 1, options())
