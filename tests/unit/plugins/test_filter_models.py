import pytest

from ansible.errors import AnsibleFilterError

from ansible_collections.cpuinfer.llm.plugins.plugin_utils._filter_models import (
    model_checks_by_instance, model_files, models_to_place, play_local_models)

A, B = "a" * 64, "b" * 64
INSTANCES = [{"name": "one", "model": "/m/a.gguf", "model_sha256": A},
             {"name": "two", "model": "/m/a.gguf", "model_sha256": A},
             {"name": "big", "model": "https://example.org/b.gguf", "model_sha256": B}]


def _placed(sha, mode="0444", uid=0, gid=0):
    return {"sha256": sha, "mode": mode, "uid": uid, "gid": gid}


def test_each_model_file_once_in_the_order_of_the_instances():
    assert model_files(INSTANCES, "/var/lib/cpuinfer/models/") == [
        "/var/lib/cpuinfer/models/%s.gguf" % A, "/var/lib/cpuinfer/models/%s.gguf" % B]


def test_nothing_to_place_when_every_model_is_in_place():
    records = {"/d/%s.gguf" % A: _placed(A), "/d/%s.gguf" % B: _placed(B)}
    assert models_to_place(INSTANCES, "/d", records) == []


@pytest.mark.parametrize("found", [None, _placed(B), _placed(A, mode="0644"), _placed(A, uid=1000), _placed(A, gid=5)])
def test_a_missing_or_different_file_is_placed_once_for_all_its_instances(found):
    records = {"/d/%s.gguf" % A: found, "/d/%s.gguf" % B: _placed(B)}
    assert models_to_place(INSTANCES, "/d", records) == [INSTANCES[0]]


def test_a_file_not_reported_is_placed():
    assert models_to_place(INSTANCES, "/d", {}) == [INSTANCES[0], INSTANCES[2]]


@pytest.mark.parametrize("instances, records", [([{"name": "x"}], {}), ("one", {}), (INSTANCES, [])])
def test_what_is_not_instances_and_records_is_refused(instances, records):
    with pytest.raises(AnsibleFilterError):
        models_to_place(instances, "/d", records)


def test_the_play_checks_each_local_model_once_whatever_the_hosts_run():
    other = [{"name": "solo", "model": "/m/c.gguf", "model_sha256": "c" * 64}]
    hostvars = {"h1": {"llama_server_instances": INSTANCES}, "h2": {"llama_server_instances": INSTANCES + other},
                "h3": {}}
    assert play_local_models(["h1", "h2", "h3"], hostvars, other) == [
        {"name": "one", "model": "/m/a.gguf", "model_sha256": A},
        {"name": "solo", "model": "/m/c.gguf", "model_sha256": "c" * 64}]


def test_a_host_without_its_own_instances_runs_the_plays():
    assert play_local_models(["h"], {"h": {}}, INSTANCES[:1]) == [{"name": "one", "model": "/m/a.gguf", "model_sha256": A}]


def test_each_instance_gets_its_models_report():
    results = [{"item": {"model": "/m/a.gguf", "model_sha256": A}, "stdout": '{"layers": 2}'}]
    assert model_checks_by_instance(INSTANCES, results) == {"one": {"layers": 2}, "two": {"layers": 2}}


def test_an_instance_whose_model_was_not_checked_is_refused_by_name():
    results = [{"item": {"model": "/m/a.gguf", "model_sha256": B}, "stdout": "{}"}]
    with pytest.raises(AnsibleFilterError, match="instance one: its model /m/a.gguf was not among"):
        model_checks_by_instance(INSTANCES, results)
