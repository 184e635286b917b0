"""The exporter's configuration as the metrics role writes it: its variables and defaults, evaluated by
ansible-playbook, give the JSON the agent's exporter reads, numbers as numbers."""

import json

from local_playbook import role_vars_value

INSTANCES = [{"name": "tiny", "port": 8081}, {"name": "py", "port": 8082, "engine": "llama-cpp-python"}]


def test_the_configuration_is_the_json_the_exporter_reads(tmp_path):
    text = role_vars_value(tmp_path, "metrics", "__metrics_config_text", "-e", json.dumps(
        {"llama_server_instances": INSTANCES, "metrics_extra_units": [{"unit": "other.service"}]}))
    config = json.loads(text)
    units = [u["unit"] for u in config["units"]]
    assert units == ["cpuinfer-llama-tiny.service", "cpuinfer-llama-py.service", "other.service"]
    assert config["units"][1]["engine"] == "llama-cpp-python"
    assert isinstance(config["interval_seconds"], int) and isinstance(config["pressure_trigger"]["stall_us"], int)
    assert isinstance(config["perf_counters"], bool) and config["textfile"].endswith("/cpuinfer.prom")
    assert text.endswith("}\n")
