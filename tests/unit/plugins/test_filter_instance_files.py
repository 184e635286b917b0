import pytest

from ansible.errors import AnsibleFilterError

from ansible_collections.cpuinfer.llm.plugins.plugin_utils._filter_instance_files import llama_instances_of_paths, metrics_units, llama_instances_to_restart


def test_instance_files_name_their_instance_once_and_other_files_none():
    paths = ["/etc/systemd/system/cpuinfer-llama-tiny.service", "/etc/cpuinfer/llama-server/tiny.env",
             "/etc/cpuinfer/llama-server/big.key", "/etc/systemd/system/cpuinfer-inference.slice",
             "/opt/cpuinfer/llama-server/builds/x/manifest.json", "cpuinfer-llama-a.b.service"]
    assert llama_instances_of_paths(paths) == ["tiny", "big", "a.b"]
    assert llama_instances_of_paths(paths, ["big", "other"]) == ["big"]
    assert llama_instances_of_paths([]) == [] and llama_instances_of_paths(None) == []


def test_the_watch_list_has_one_unit_per_instance():
    units = metrics_units([{"name": "tiny", "port": 8081}, {"name": "py", "port": 8082, "engine": "llama-cpp-python"}],
                          "inference")
    assert units == [
        {"unit": "cpuinfer-llama-tiny.service", "port": 8081, "engine": "llama-server", "resctrl_group": "inference"},
        {"unit": "cpuinfer-llama-py.service", "port": 8082, "engine": "llama-cpp-python", "resctrl_group": "inference"}]
    assert metrics_units([], "") == [] and metrics_units([{"name": "a", "port": 1}], "")[0]["resctrl_group"] is None
    with pytest.raises(AnsibleFilterError, match="a name and a port"):
        metrics_units([{"name": "a"}])


RUN = [{"name": "a", "model_sha256": "m1"}, {"name": "b", "model_sha256": "m2"}, {"name": "c", "model_sha256": "m1"}]


def test_restarted_are_the_instances_whose_files_or_model_changed_in_run_order():
    written = ["/etc/systemd/system/cpuinfer-llama-c.service", "/etc/systemd/system/cpuinfer-inference.slice",
               "/etc/cpuinfer/llama-server/c.key", "/etc/cpuinfer/llama-server/gone.env"]
    models = [{"changed": False, "item": {"model_sha256": "m1"}}, {"changed": True, "item": {"model_sha256": "m2"}}]
    assert llama_instances_to_restart(RUN, written, models) == ["b", "c"]
    assert llama_instances_to_restart(RUN, [], [{"changed": True, "item": {"model_sha256": "m1"}}]) == ["a", "c"]


def test_nothing_changed_restarts_nothing_and_a_new_venv_restarts_every_instance():
    unchanged = [{"changed": False, "item": {"model_sha256": "m1"}}, {"skipped": True, "item": {"model_sha256": "m2"}}]
    assert llama_instances_to_restart(RUN, [], unchanged) == []
    assert llama_instances_to_restart(RUN, [], unchanged, venv_changed=True) == ["a", "b", "c"]
    assert llama_instances_to_restart([], ["/etc/cpuinfer/llama-server/a.env"], []) == []


def test_a_rolling_restart_restarts_every_instance_whatever_changed():
    assert llama_instances_to_restart(RUN, [], [], restart_all=True) == [instance["name"] for instance in RUN]
    assert llama_instances_to_restart(RUN, [], [], restart_all=False) == []
