import pytest

from ansible.errors import AnsibleFilterError

from ansible_collections.cpuinfer.llm.plugins.plugin_utils._filter_frontdoor import frontdoor_backends, frontdoor_server_name

SHA_A, SHA_B = "a" * 64, "b" * 64


def _served(name, port, parallel=2, base=None, sha=SHA_A):
    return {"name": name, "base_name": base or name, "port": port, "parallel": parallel, "model_sha256": sha}


def _fleet():
    return {
        "h1": {"ansible_host": "10.0.0.1", "llama_server_served": [_served("tiny", 8081)]},
        "h2": {"ansible_host": "10.0.0.2", "frontdoor_server_address": "192.0.2.2",
               "llama_server_served": [_served("tiny-node0", 8081, 1, "tiny"), _served("tiny-node1", 8082, 3, "tiny")]},
    }


def test_one_backend_per_model_one_server_per_instance_maxconn_from_slots():
    plan = frontdoor_backends(["h1", "h2"], _fleet())
    assert plan["problems"] == []
    (backend,) = plan["backends"]
    assert backend["name"] == "tiny" and backend["port"] == 9081
    assert [(s["name"], s["address"], s["port"], s["maxconn"]) for s in backend["servers"]] == [
        ("h1--tiny", "10.0.0.1", 8081, 2), ("h2--tiny-node0", "192.0.2.2", 8081, 1), ("h2--tiny-node1", "192.0.2.2", 8082, 3)]


def test_two_hosts_whose_servers_land_on_one_address_and_port_are_refused():
    fleet = _fleet()
    fleet["h1"]["frontdoor_server_address"] = "192.0.2.2"  # as a fallback to one default address did in the lab
    plan = frontdoor_backends(["h1", "h2"], fleet)
    assert plan["problems"] == ["servers h1--tiny, h2--tiny-node0 are all at 192.0.2.2:8081: each host's "
                                "frontdoor_server_address must be where the front door reaches that host"]


def test_a_listener_port_given_per_model_wins_over_the_offset():
    plan = frontdoor_backends(["h1"], _fleet(), {"tiny": 8000})
    assert plan["backends"][0]["port"] == 8000


def test_a_group_with_no_instances_behind_it_is_refused():
    plan = frontdoor_backends(["h3"], {"h3": {"llama_server_served": []}})
    assert plan["problems"] == ["the front door has no instances behind it: none of h3 serves one "
                                "(llama_server_served); give the backend hosts llama_server_instances"]


def test_a_host_that_declares_instances_but_was_not_converged_is_refused():
    fleet = dict(_fleet(), h3={"llama_server_instances": [{"name": "tiny"}]})
    plan = frontdoor_backends(["h1", "h3"], fleet)
    assert plan["problems"] == ["h3 declares llama_server_instances but was not converged in this run "
                                "(no llama_server_served): converge it in the same run as the front door"]


def test_two_models_with_one_name_are_refused_naming_both():
    fleet = _fleet()
    fleet["h1"]["llama_server_served"] = [_served("tiny", 8081, sha=SHA_B)]
    (problem,) = frontdoor_backends(["h1", "h2"], fleet)["problems"]
    assert problem.startswith("model name tiny names 2 different models (aaaaaaaaaaaa on h2--tiny-node0, h2--tiny-node1; "
                              "bbbbbbbbbbbb on h1--tiny)")


@pytest.mark.parametrize("maxconn", [0, -1, "x", True])
def test_a_maxconn_below_one_is_refused(maxconn):
    problems = frontdoor_backends(["h1"], _fleet(), server_maxconn=maxconn)["problems"]
    assert problems == ["h1 instance tiny: maxconn %r is below 1: a server with no connection slot could never serve" % (maxconn,)]


def test_a_given_maxconn_replaces_the_slots():
    servers = frontdoor_backends(["h2"], _fleet(), server_maxconn=4)["backends"][0]["servers"]
    assert {s["maxconn"] for s in servers} == {4}


@pytest.mark.parametrize("port, message", [(0, "is not between 1 and 65535"), (70000, "is not between 1 and 65535"),
                                           ("http", "is not a number")])
def test_a_listener_port_out_of_range_is_refused(port, message):
    (problem,) = frontdoor_backends(["h1"], _fleet(), {"tiny": port})["problems"]
    assert problem == "model tiny listener: port %r %s" % (port, message)


def test_a_listener_on_a_reserved_port_or_twice_is_refused():
    fleet = _fleet()
    fleet["h1"]["llama_server_served"].append(_served("other", 8090, sha=SHA_B))
    problems = frontdoor_backends(["h1"], fleet, {"tiny": 8405, "other": 8405}, reserved_ports={"the metrics listener": 8405})["problems"]
    assert problems == ["model other: listener port 8405 is also the metrics listener",
                        "model tiny: listener port 8405 is also model other's listener"]


def test_server_names_are_safe_for_haproxy():
    assert frontdoor_server_name("rack 1/host@a", "tiny") == "rack_1_host_a--tiny"


def test_hosts_must_be_a_list():
    with pytest.raises(AnsibleFilterError):
        frontdoor_backends("h1", _fleet())


SHOW_STAT = """# pxname,svname,qcur,qmax,scur,smax,slim,stot,bin,bout,dreq,dresp,ereq,econ,eresp,wretr,wredis,status,weight
fe-tiny,FRONTEND,,,1,2,262,10,0,0,0,0,0,,,,,OPEN,
tiny,h1--tiny,0,0,1,1,2,5,0,0,,0,,0,0,0,0,UP,1
tiny,h2--tiny-node0,2,2,0,1,1,5,0,0,,0,,0,0,0,0,DRAIN,1
tiny,h2--tiny-node1,0,0,0,1,3,5,0,0,,0,,0,0,0,0,MAINT (via tiny/h1--tiny),1
tiny,h3--tiny,0,0,0,0,3,0,0,0,,0,,0,0,0,0,DOWN 1/2,1
tiny,BACKEND,0,0,1,2,26,10,0,0,0,0,,0,0,0,0,UP,3
"""


def test_states_from_show_stat_name_the_servers_out_of_rotation():
    from ansible_collections.cpuinfer.llm.plugins.plugin_utils._filter_frontdoor import frontdoor_states
    states = frontdoor_states(SHOW_STAT)
    assert [(s["server"], s["status"], s["sessions"], s["queue"], s["out_of_rotation"]) for s in states] == [
        ("h1--tiny", "UP", 1, 0, False), ("h2--tiny-node0", "DRAIN", 0, 2, True),
        ("h2--tiny-node1", "MAINT (via tiny/h1--tiny)", 0, 0, True), ("h3--tiny", "DOWN 1/2", 0, 0, False)]


def test_states_refuse_an_answer_that_is_not_show_stat():
    from ansible_collections.cpuinfer.llm.plugins.plugin_utils._filter_frontdoor import frontdoor_states
    with pytest.raises(AnsibleFilterError, match="not the answer of show stat"):
        frontdoor_states("Unknown command.")


def test_a_drained_server_is_a_drifted_setting_an_up_one_is_not():
    from ansible_collections.cpuinfer.llm.plugins.plugin_utils._filter_frontdoor import frontdoor_setting, frontdoor_states
    rows = [frontdoor_setting(state) for state in frontdoor_states(SHOW_STAT)]
    assert [(r["setting"], r["actual"], r["in_sync"]) for r in rows] == [
        ("front door server tiny/h1--tiny", "UP", True), ("front door server tiny/h2--tiny-node0", "DRAIN", False),
        ("front door server tiny/h2--tiny-node1", "MAINT (via tiny/h1--tiny)", False),
        ("front door server tiny/h3--tiny", "DOWN 1/2", True)]
