import pytest

from ansible.errors import AnsibleFilterError
from ansible_collections.cpuinfer.llm.plugins.plugin_utils._filter_cpus import besteffort_cpu_weight, inference_threads

XEON_8_CORES_HT = ["%d,%d" % (c, c + 8) for c in range(8)]


@pytest.mark.parametrize("allowed,quota,threads", [
    ("", 0, 8),            # whole host: one thread per physical core, not per hyperthread
    ("2-5", 0, 4),
    ("2-5,10-13", 0, 4),   # both hyperthreads of cores 2-5 still make 4 cores
    ("2-7", 300, 3),       # quota caps it
    ("2-7", 250, 3),       # 2.5 CPUs round up
    ("0", 0, 1),
    ("0-15", 50, 1),
])
def test_threads(allowed, quota, threads):
    assert inference_threads(XEON_8_CORES_HT, allowed, quota) == threads


def test_bad_cpu_list():
    with pytest.raises(AnsibleFilterError, match="reversed"):
        inference_threads(XEON_8_CORES_HT, "5-2")


def _facts(cores, nodes, l3=()):
    return {"core_cpus": cores, "numa_nodes": [{"id": i, "cpus": c} for i, c in enumerate(nodes)], "l3_domains": list(l3)}


def test_plan_two_socket_xeon_keeps_whole_cores_and_nodes():
    from ansible_collections.cpuinfer.llm.plugins.plugin_utils._filter_cpus import cpu_plan

    cores = ["%d,%d" % (c, c + 8) for c in range(8)]
    plan = cpu_plan(_facts(cores, ["0-3,8-11", "4-7,12-15"], ["0-3,8-11", "4-7,12-15"]), 1)
    assert plan["split"] and plan["housekeeping"] == "0,8"
    assert plan["inference"] == "1-7,9-15"
    assert plan["inference_by_node"] == [{"node": 0, "cpus": "1-3,9-11"}, {"node": 1, "cpus": "4-7,12-15"}]
    assert plan["inference_by_l3"] == ["1-3,9-11", "4-7,12-15"]


def test_plan_one_core_host_is_not_split():
    from ansible_collections.cpuinfer.llm.plugins.plugin_utils._filter_cpus import cpu_plan

    plan = cpu_plan(_facts(["0"], ["0"]), 1)
    assert not plan["split"] and plan["housekeeping"] == plan["inference"] == "0"


def test_plan_needs_host_facts():
    from ansible_collections.cpuinfer.llm.plugins.plugin_utils._filter_cpus import cpu_plan

    with pytest.raises(AnsibleFilterError, match="host_facts"):
        cpu_plan({}, 1)


@pytest.mark.parametrize("given", [2, "2", " 2 "])
def test_cpu_plan_takes_a_number_as_extra_vars_give_it(given):
    from ansible_collections.cpuinfer.llm.plugins.plugin_utils._filter_cpus import cpu_plan

    plan = cpu_plan(_facts(["0", "1", "2", "3"], ["0-3"]), given)
    assert plan["housekeeping"] == "0-1" and plan["inference"] == "2-3"


@pytest.mark.parametrize("given,words", [("two", "whole number"), ("２", "whole number"), (True, "whole number"),
                                         (0, "at least 1"), ("-1", "whole number")])
def test_cpu_plan_refuses_what_is_no_core_count(given, words):
    from ansible_collections.cpuinfer.llm.plugins.plugin_utils._filter_cpus import cpu_plan

    with pytest.raises(AnsibleFilterError, match=words):
        cpu_plan(_facts(["0", "1"], ["0-1"]), given)


@pytest.mark.parametrize("facts, groups", [
    ({"platform": "xeon", "llama_build_class": "x86-avx512"}, ["cpuinfer_xeon", "cpuinfer_x86_avx512"]),
    ({"platform": "kunpeng", "llama_build_class": "arm-armv8.2-a+dotprod+fp16"},
     ["cpuinfer_kunpeng", "cpuinfer_arm_armv8_2_a_dotprod_fp16"]),
    ({"platform": "other", "llama_build_class": None}, ["cpuinfer_other", "cpuinfer_no_build_class"]),
])
def test_fact_groups_are_valid_group_names(facts, groups):
    from ansible_collections.cpuinfer.llm.plugins.plugin_utils._filter_cpus import fact_groups

    assert fact_groups(facts) == groups
    assert all(__import__("re").match(r"^[a-z][a-z0-9_]*$", name) for name in fact_groups(facts))


def test_fact_groups_need_host_facts():
    from ansible_collections.cpuinfer.llm.plugins.plugin_utils._filter_cpus import fact_groups

    with pytest.raises(AnsibleFilterError, match="host_facts"):
        fact_groups({"cpus": 4})


@pytest.mark.parametrize("cpu_idle,systemd,weight", [
    (True, 252, "idle"),   # systemd writes cpu.idle itself: a numeric weight would have it write 0
    (True, 249, 1),        # an older systemd leaves cpu.idle to the oneshot
    (False, 252, 1),       # no cpu.idle in the kernel: idle would leave the default weight
    (True, None, 1),
])
def test_the_best_effort_weight(cpu_idle, systemd, weight):
    facts = {"cgroup": {"version": 2, "cpu_idle": cpu_idle}, "runtime": {"glibc": "2.36", "systemd": systemd}}
    assert besteffort_cpu_weight(facts) == weight


def test_the_best_effort_weight_needs_the_facts():
    with pytest.raises(AnsibleFilterError, match="host_facts"):
        besteffort_cpu_weight({"platform": "xeon"})
