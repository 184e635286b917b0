"""llama_server's instance plan: defaults, threads, derived memory limits and refusals."""

import pytest
from ansible.errors import AnsibleFilterError

from ansible_collections.cpuinfer.llm.plugins.plugin_utils._filter_llama import (
    ENGINE_OVERHEAD,
    MIB,
    extra_args_problems,
    llama_build_classes,
    llama_instance_problems,
    llama_instances,
    model_memory,
)

# check_gguf.py's metadata of the generated llama-tiny model
TINY = {"bytes": 293504, "layers": 2, "head_count": 4, "head_count_kv": 2, "key_length": 16, "value_length": 16,
        "context_length": 1024}
DEFAULTS = {"n_ctx": 512, "cpu_quota": 0, "memory_high": "", "memory_max": "", "engine": "llama-server", "parallel": 1,
            "cache_type_k": "f16", "cache_type_v": "f16", "extra_args": []}
CORES = ["0", "1", "2", "3"]
FLAGS = {"llama-server": ["--temp", "--seed"]}  # allowed extra_args per engine


def plan(*instances, models=None, allowed="2-3"):
    return llama_instances(list(instances), DEFAULTS, allowed, CORES, {"tiny": TINY} if models is None else models, FLAGS)


def test_kv_cache_follows_context_slots_layers_and_head_sizes():
    memory = model_memory(TINY, 256, 4)
    # 256 tokens x 4 slots x 2 layers x 2 kv heads x (16 + 16) values x 2 bytes
    assert memory["kv_cache"] == 256 * 4 * 2 * 2 * 32 * 2
    assert memory["need"] == TINY["bytes"] + memory["kv_cache"] + ENGINE_OVERHEAD["llama-server"]
    assert memory["memory_high"] % MIB == 0 and memory["memory_max"] % MIB == 0
    assert memory["need"] * 1.15 <= memory["memory_high"] < memory["memory_max"]


def test_quantised_cache_and_the_python_engine_change_the_need():
    assert model_memory(TINY, 4096, 1, "q8_0", "q8_0")["kv_cache"] < model_memory(TINY, 4096)["kv_cache"] / 1.8
    assert model_memory(TINY, 256, engine="llama-cpp-python")["need"] > model_memory(TINY, 256)["need"]


def test_an_instance_without_limits_gets_derived_ones_and_its_threads():
    result = plan({"name": "tiny", "model": "m.gguf", "parallel": 2})
    assert result["problems"] == []
    instance = result["instances"][0]
    # the prompt cache in RAM as large as the KV cache (MiB up), and counted
    kv_cache = model_memory(TINY, 512, 2)["kv_cache"]
    assert instance["cache_ram_mib"] == -(-kv_cache // MIB) == 1
    derived = model_memory(TINY, 512, 2, prompt_cache=MIB)
    assert derived["need"] == model_memory(TINY, 512, 2)["need"] + MIB
    assert instance["memory_max"] == "%dM" % (derived["memory_max"] // MIB)
    assert instance["memory_high"] == "%dM" % (derived["memory_high"] // MIB)
    assert instance["threads"] == 2 and instance["allowed_cpus"] == "2-3" and instance["ctx_total"] == 1024


def test_given_limits_stand_and_a_given_max_alone_gets_no_derived_high():
    instance = plan({"name": "tiny", "model": "m.gguf", "memory_max": "1G"})["instances"][0]
    assert instance["memory_max"] == "1G" and instance["memory_high"] == ""


@pytest.mark.parametrize("instance,words", [
    ({"memory_max": "100K"}, "memory_max 100K is below the model's weights"),
    ({"engine": "llama-cpp-python", "parallel": 2}, "serves one request at a time"),
    ({"parallel": 0}, "parallel must be at least 1"),
    ({"memory_max": "lots"}, "memory_max 'lots' is not a size"),
    ({"cache_ram": "max"}, "cache_ram 'max' is not a size"),
    ({"cache_ram": "lots"}, "cache_ram 'lots' is not a size"),
    ({"extra_args": ["--port", "9"]}, "extra_args flag --port is not allowed"),
    ({"extra_args": ["0.7"]}, "extra_args word '0.7' follows no flag"),
])
def test_refusals(instance, words):
    result = plan(dict({"name": "tiny", "model": "m.gguf"}, **instance))
    assert any(words in problem for problem in result["problems"]), result["problems"]


@pytest.mark.parametrize("given, mib", [("0", 0), ("64M", 64), ("1G", 1024), (1, 1)])
def test_a_given_prompt_cache_is_passed_in_mib_and_counted_in_the_limits(given, mib):
    instance = plan({"name": "tiny", "model": "m.gguf", "cache_ram": given})["instances"][0]
    assert instance["cache_ram_mib"] == mib
    assert instance["memory_max"] == "%dM" % (model_memory(TINY, 512, prompt_cache=mib * MIB)["memory_max"] // MIB)


def test_the_python_engine_and_an_unreadable_model_get_no_prompt_cache():
    assert plan({"name": "tiny", "model": "m.gguf", "engine": "llama-cpp-python"})["instances"][0]["cache_ram_mib"] == 0
    far = plan({"name": "far", "model": "https://x/m.gguf", "memory_max": "2G"}, models={})["instances"][0]
    assert far["cache_ram_mib"] == 0


def test_a_model_the_controller_cannot_read_needs_memory_max():
    result = plan({"name": "far", "model": "https://example.invalid/m.gguf"}, models={})
    assert "give memory_max for a model the controller cannot read" in result["problems"][0]
    assert plan({"name": "far", "model": "https://x/m.gguf", "memory_max": "2G"}, models={})["problems"] == []


def test_extra_args_take_allowed_flags_with_their_values():
    assert extra_args_problems("x", ["--temp", "0.2", "--seed=7"], FLAGS) == []


def _host(build_class, arch="x86_64", release="bookworm", glibc="2.36", glibcxx="3.4.30", python=(3, 11), builds=True):
    facts = {"cpuinfer": {"llama_build_class": build_class, "arch": arch, "llama_cmake_args": ["-DGGML_NATIVE=OFF"],
                          "runtime": {"glibc": glibc, "glibcxx": glibcxx},
                          "os": {"architecture": arch, "distribution": "Debian", "release": release,
                                 "python": "%d.%d" % python}}}
    return {"ansible_facts": facts, "__llama_server_build_sources": ["llama.cpp"] if builds else []}


def test_build_classes_group_by_class_and_release_for_the_oldest_runtime():
    hostvars = {
        "x1": _host("x86-avx2"), "x2": _host("x86-avx2", glibc="2.31", glibcxx="3.4.28", release="bullseye"),
        "x3": _host("x86-avx2", glibc="2.36"), "k1": _host("arm-armv8.2-a+dotprod+fp16", arch="aarch64"),
        "idle": _host("x86-avx512", builds=False),
    }
    builds = llama_build_classes(sorted(hostvars), hostvars, ["arm-armv8.2-a+dotprod+fp16"])
    summary = [(b["build_class"], b["release"], b["glibc"], b["hosts"]) for b in builds]
    assert summary == [("arm-armv8.2-a+dotprod+fp16", "bookworm", "2.36", ["k1"]),
                       ("x86-avx2", "bookworm", "2.36", ["x1", "x3"]),
                       ("x86-avx2", "bullseye", "2.31", ["x2"])]
    assert builds[0]["cmake_args"] == ["-DGGML_NATIVE=OFF", "-DGGML_CPU_KLEIDIAI=ON"] and builds[0]["machine"] == "aarch64"
    assert "-DGGML_CPU_KLEIDIAI=ON" not in builds[1]["cmake_args"]


def test_build_classes_keep_the_oldest_of_mixed_runtimes():
    hostvars = {"a": _host("x86-avx2", glibcxx="3.4.30"), "b": _host("x86-avx2", glibc="2.35", glibcxx="3.4.29")}
    (build,) = llama_build_classes(["a", "b"], hostvars)
    assert (build["glibc"], build["glibcxx"]) == ("2.35", "3.4.29")


@pytest.mark.parametrize("hostvars, classes, words", [
    ({"m": _host("x86-avx2", glibc=None)}, [], "m has no glibc"),
    ({"x": _host("x86-avx2")}, ["x86-avx2"], "KleidiAI is for aarch64"),
    ({"old": {"ansible_facts": {"cpuinfer": dict(_host("x86-avx2")["ansible_facts"]["cpuinfer"], os=None)},
              "__llama_server_build_sources": ["llama.cpp"]}}, [], "old: host_facts of this release"),
])
def test_build_classes_refusals(hostvars, classes, words):
    with pytest.raises(AnsibleFilterError, match=words):
        llama_build_classes(list(hostvars), hostvars, classes)


def test_build_hosts_by_class_before_machine():
    hostvars = {"k": _host("arm-armv8-a", arch="aarch64"), "n": _host("arm-armv8.2-a+dotprod+fp16", arch="aarch64"),
                "x": _host("x86-avx2")}
    builds = llama_build_classes(["k", "n", "x"], hostvars, [], {"aarch64": "armbox", "arm-armv8-a": "phytiumbox"})
    assert [(b["build_class"], b["build_host"]) for b in builds] == [
        ("arm-armv8-a", "phytiumbox"), ("arm-armv8.2-a+dotprod+fp16", "armbox"), ("x86-avx2", None)]


TWO_NODES = {"inference_by_node": [{"node": 0, "cpus": "1-3"}, {"node": 1, "cpus": "4-7"}],
             "inference_by_l3": ["1-3", "4-7"]}
ONE_NODE = {"inference_by_node": [{"node": 0, "cpus": "1-3"}], "inference_by_l3": ["1-3"]}
NUMA = [{"id": 0, "cpus": "0-3"}, {"id": 1, "cpus": "4-7"}]
PLACED = {"name": "tiny", "model": "m.gguf", "port": 8081, "placement": "per_node"}


def placed(cpu_plan, *instances):
    return llama_instances(list(instances), DEFAULTS, "1-7", [str(c) for c in range(8)], {"tiny": TINY}, FLAGS,
                           cpu_plan, NUMA)


def test_per_node_makes_one_instance_per_node_bound_to_it():
    result = placed(TWO_NODES, PLACED)
    assert not result["problems"]
    assert [(i["name"], i["port"], i["allowed_cpus"], i["allowed_memory_nodes"], i["numa_policy"], i["threads"])
            for i in result["instances"]] == [("tiny-node0", 8081, "1-3", "0", "bind", 3),
                                              ("tiny-node1", 8082, "4-7", "1", "bind", 4)]
    # the memory limits come from the model of the entry the copies came from
    assert all(i["memory_max"] for i in result["instances"])


def test_the_same_profile_fits_a_one_node_host():
    result = placed(ONE_NODE, PLACED)
    assert not result["problems"] and [i["name"] for i in result["instances"]] == ["tiny-node0"]


def test_per_l3_finds_each_domains_node():
    result = placed(TWO_NODES, dict(PLACED, placement="per_l3"))
    assert [(i["name"], i["allowed_memory_nodes"]) for i in result["instances"]] == [("tiny-l3-0", "0"), ("tiny-l3-1", "1")]


def test_a_placement_default_applies_to_entries_without_one():
    entry = {k: v for k, v in PLACED.items() if k != "placement"}
    result = llama_instances([entry], dict(DEFAULTS, placement="per_node"), "1-7", [str(c) for c in range(8)],
                             {"tiny": TINY}, FLAGS, TWO_NODES, NUMA)
    assert len(result["instances"]) == 2


@pytest.mark.parametrize("instances, cpu_plan, words", [
    ([dict(PLACED, placement="per_socket")], TWO_NODES, "placement 'per_socket' is not one of"),
    ([dict(PLACED, allowed_cpus="1")], TWO_NODES, "places its CPUs and memory itself"),
    ([PLACED], {}, "needs host_tuning's CPU plan"),
    ([PLACED, {"name": "other", "model": "m.gguf", "port": 8082}], TWO_NODES, "share a port: 8082"),
])
def test_placements_that_cannot_work_are_refused(instances, cpu_plan, words):
    assert any(words in problem for problem in placed(cpu_plan, *instances)["problems"]), placed(cpu_plan, *instances)


def test_a_best_effort_instance_takes_the_slices_cpus_and_fits_the_housekeeping_cores():
    plan_ = dict(TWO_NODES, housekeeping="0,8")
    result = llama_instances([{"name": "tiny", "model": "m.gguf", "port": 8081},
                              {"name": "batch", "model": "m.gguf", "port": 8082, "best_effort": True}],
                             DEFAULTS, "1-7", ["0,8", "1,9", "2,10", "3,11"], {"tiny": TINY, "batch": TINY}, FLAGS,
                             plan_, NUMA)
    assert not result["problems"]
    serving, batch = result["instances"]
    assert (serving["allowed_cpus"], serving["threads"]) == ("1-7", 3)
    assert (batch["allowed_cpus"], batch["threads"]) == ("", 1)


def test_a_best_effort_instance_is_not_placed_per_domain():
    problems = placed(TWO_NODES, dict(PLACED, best_effort=True))["problems"]
    assert any("best_effort runs in the best-effort slice, not placed per domain" in p for p in problems), problems


SHA = "b7be0a462709ea7f869601a8151f125062156b10c84998bf1034227d065427bf"
FACTS = {"llama_build_class": "x86_64-avx2", "platform": "xeon", "os": {"architecture": "x86_64"}}


def test_good_instances_on_a_host_of_a_build_class_have_no_problem():
    instances = [{"name": "tiny", "model_sha256": SHA, "port": 8081}, {"name": "tiny-2", "model_sha256": SHA, "port": "8082"}]
    assert llama_instance_problems(instances, FACTS, "h1") == []


def test_every_instance_problem_is_named_at_once():
    instances = [{"name": "Tiny", "model_sha256": SHA, "port": 8081}, {"name": "short", "model_sha256": "ab", "port": 8082},
                 {"name": "zero", "model_sha256": SHA, "port": 0}, {"name": "a", "model_sha256": SHA, "port": 9000},
                 {"name": "b", "model_sha256": SHA, "port": 9000}]
    problems = llama_instance_problems(instances, FACTS, "h1")
    assert [p.split(":")[0] for p in problems[:3]] == ["instance Tiny", "instance short", "instance zero"]
    assert problems[3:] == ["port 9000 is given to more than one instance (a, b)"]


def test_a_host_without_a_build_class_is_refused_with_its_architecture():
    facts = {"llama_build_class": None, "platform": "unknown", "os": {"architecture": "riscv64"}}
    problems = llama_instance_problems([{"name": "tiny", "model_sha256": SHA, "port": 8081}], facts, "rv1")
    assert len(problems) == 1 and problems[0].startswith("rv1 is riscv64 (host_facts platform unknown)")
