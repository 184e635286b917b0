"""The exporter's configuration as the metrics role writes it: its variables and defaults, evaluated by
ansible-playbook, give the JSON the agent's exporter reads, numbers as numbers."""

import json
import re

from local_playbook import REPO, role_vars_value

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


def test_node_exporter_drop_in_keeps_the_package_args_and_adds_the_roles_flags(tmp_path):
    template = REPO / "roles" / "metrics" / "templates" / "node-exporter-cpuinfer.conf.j2"
    text = role_vars_value(tmp_path, "metrics", "lookup('cpuinfer.llm.role_template', '%s')" % template,
                           "-e", "metrics_textfile_dir=/srv/textfiles")
    service = text.split("[Service]\n", 1)[1].splitlines()
    # an empty ExecStart= first: a drop-in must clear the package's command before replacing it
    assert service[0] == "ExecStart="
    argv = service[1].split("=", 1)[1].split()
    assert argv[:2] == ["/usr/bin/prometheus-node-exporter", "$ARGS"]
    assert "--collector.textfile.directory=/srv/textfiles" in argv and "--collector.systemd" in argv
    include = next(a for a in argv if a.startswith("--collector.systemd.unit-include="))
    pattern = re.compile(include.split("=", 1)[1])
    assert pattern.fullmatch("cpuinfer-llama-tiny.service") and pattern.fullmatch("cpuinfer-metrics.service")
    assert not pattern.fullmatch("ssh.service")
