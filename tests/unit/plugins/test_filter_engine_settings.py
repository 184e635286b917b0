"""How an instance runs its engine: given, calibrated or derived threads and ubatch, the engine a
calibration chose, --numa from the placement; calibrations from llama-bench's JSON; engines' flags."""

import json

import pytest
from ansible.errors import AnsibleFilterError

from ansible_collections.cpuinfer.llm.plugins.plugin_utils._filter_engine_settings import (
    calibration_best,
    calibration_document,
    calibration_grid,
    llama_bench_results,
    numa_mode,
)
from ansible_collections.cpuinfer.llm.plugins.plugin_utils._filter_llama import (
    extra_args_problems,
    llama_build_argv,
    llama_build_classes,
    llama_build_sources,
    llama_instances,
)

TINY = {"bytes": 293504, "layers": 2, "head_count": 4, "head_count_kv": 2, "key_length": 16, "value_length": 16,
        "context_length": 1024, "sha256": "a" * 64}
DEFAULTS = {"n_ctx": 512, "cpu_quota": 0, "memory_high": "", "memory_max": "", "engine": "llama-server", "parallel": 1,
            "cache_type_k": "f16", "cache_type_v": "f16", "extra_args": [], "n_ubatch": 0, "numa": ""}
CORES = [str(c) for c in range(8)]
FLAGS = {"llama-server": ["--temp", "--cache-reuse"], "ik_llama.cpp": ["--temp", "-mla", "-rtr"]}
NUMA = [{"id": 0, "cpus": "0-3"}, {"id": 1, "cpus": "4-7"}]


def bench(engine_rates):
    """llama-bench JSON: {threads: (decode rate, {ubatch: prompt rate})}."""
    tests = []
    for threads, (decode, prompts) in engine_rates.items():
        tests.append({"n_threads": threads, "n_prompt": 0, "n_gen": 64, "n_ubatch": 512, "avg_ts": decode})
        for ubatch, rate in prompts.items():
            tests.append({"n_threads": threads, "n_prompt": 512, "n_gen": 0, "n_ubatch": ubatch, "avg_ts": rate})
    return tests


MAINLINE = llama_bench_results(bench({2: (10.0, {128: 90.0, 512: 100.0}), 4: (12.0, {128: 150.0, 512: 160.0})}),
                               "llama-server")
IK = llama_bench_results(bench({2: (11.0, {128: 200.0, 512: 260.0}), 3: (14.0, {128: 250.0, 512: 240.0}),
                                4: (13.0, {128: 300.0, 512: 310.0})}), "ik_llama.cpp")


def plan(*instances, calibrations=None, allowed="0-7", numa_nodes=None):
    return llama_instances(list(instances), DEFAULTS, allowed, CORES, {"tiny": TINY}, FLAGS, {}, numa_nodes or [],
                           calibrations)


def test_bench_rows_pair_each_prompt_rate_with_the_decode_rate_of_its_threads():
    assert MAINLINE[0] == {"engine": "llama-server", "threads": 2, "threads_batch": 2, "n_ubatch": 128,
                           "prompt_tokens_per_second": 90.0, "decode_tokens_per_second": 10.0}
    assert len(MAINLINE) == 4 and len(IK) == 6


def test_the_best_takes_decode_threads_and_prompt_threads_and_ubatch_apart():
    assert calibration_best(MAINLINE + IK) == {
        "engine": "ik_llama.cpp", "threads": 3, "threads_batch": 4, "n_ubatch": 512,
        "decode_tokens_per_second": 14.0, "prompt_tokens_per_second": 310.0}


def test_mainline_wins_where_the_fork_is_not_faster():
    slow_ik = [dict(row, decode_tokens_per_second=row["decode_tokens_per_second"] / 2) for row in MAINLINE]
    for row in slow_ik:
        row["engine"] = "ik_llama.cpp"
    assert calibration_best(MAINLINE + slow_ik)["engine"] == "llama-server"
    assert calibration_best(MAINLINE + [dict(r, engine="ik_llama.cpp") for r in MAINLINE])["engine"] == "llama-server"


def test_an_instance_takes_its_engines_calibration_unless_it_sets_its_own():
    calibrations = {"a" * 64: {"results": MAINLINE + IK}}
    entry = {"name": "tiny", "model": "m.gguf", "model_sha256": "a" * 64, "port": 8081}
    (mainline,) = plan(entry, calibrations=calibrations)["instances"]
    # the engine stays the instance's (here the default) even where another engine measured faster
    assert (mainline["engine"], mainline["threads"], mainline["threads_batch"], mainline["n_ubatch"]) == (
        "llama-server", 4, 4, 512)
    assert mainline["settings_from"] == {"engine": "default", "threads": "calibration",
                                         "threads_batch": "calibration", "n_ubatch": "calibration"}
    (fork,) = plan(dict(entry, engine="ik_llama.cpp"), calibrations=calibrations)["instances"]
    assert (fork["threads"], fork["threads_batch"], fork["n_ubatch"], fork["source"]) == (3, 4, 512, "ik_llama.cpp")
    (own,) = plan(dict(entry, engine="ik_llama.cpp", threads=5, n_ubatch=64), calibrations=calibrations)["instances"]
    assert (own["threads"], own["threads_batch"], own["n_ubatch"]) == (5, 4, 64)
    assert own["settings_from"] == {"engine": "given", "threads": "given", "threads_batch": "calibration",
                                    "n_ubatch": "given"}


def test_calibrated_threads_above_the_instances_cores_are_not_taken():
    (instance,) = plan({"name": "tiny", "model": "m.gguf", "model_sha256": "a" * 64, "port": 8081,
                        "engine": "ik_llama.cpp"}, calibrations={"a" * 64: {"results": IK}}, allowed="0-1")["instances"]
    assert (instance["threads"], instance["threads_batch"]) == (2, 2)
    assert instance["settings_from"]["threads"] == "derived"


def test_without_calibration_threads_are_the_cores_and_batch_threads_follow():
    (instance,) = plan({"name": "tiny", "model": "m.gguf", "model_sha256": "b" * 64, "port": 8081})["instances"]
    assert (instance["engine"], instance["threads"], instance["threads_batch"], instance["n_ubatch"]) == (
        "llama-server", 8, 8, 0)
    assert instance["settings_from"] == {"engine": "default", "threads": "derived", "threads_batch": "derived",
                                         "n_ubatch": "derived"}


def test_a_given_thread_count_must_be_a_whole_number():
    problems = plan({"name": "tiny", "model": "m.gguf", "port": 8081, "threads": "many"})["problems"]
    assert any("threads 'many' is not a whole number" in p for p in problems), problems


@pytest.mark.parametrize("allowed, placed, nodes, mode", [
    ("0-7", False, [{"id": 0, "cpus": "0-7"}], ""),
    ("0-7", False, NUMA, "distribute"),
    ("", False, NUMA, "distribute"),
    ("4-7", False, NUMA, "numactl"),
    ("0-3", True, NUMA, "numactl"),
])
def test_numa_mode_follows_where_the_instance_runs(allowed, placed, nodes, mode):
    assert numa_mode(allowed, placed, nodes) == mode


def test_a_given_numa_mode_stands():
    (instance,) = plan({"name": "tiny", "model": "m.gguf", "port": 8081, "numa": "isolate"}, numa_nodes=NUMA)["instances"]
    assert instance["numa"] == "isolate"
    (derived,) = plan({"name": "tiny", "model": "m.gguf", "port": 8081}, numa_nodes=NUMA)["instances"]
    assert derived["numa"] == "distribute"


def test_a_flag_of_the_other_engine_is_refused_by_name():
    assert extra_args_problems("x", ["-mla", "3", "-rtr"], FLAGS, "ik_llama.cpp") == []
    (problem,) = extra_args_problems("x", ["--cache-reuse", "256"], FLAGS, "ik_llama.cpp")
    assert problem == "instance x: extra_args flag --cache-reuse is llama-server's; engine ik_llama.cpp has no such flag"
    (problem,) = extra_args_problems("x", ["-rtr"], FLAGS, "llama-server")
    assert "is ik_llama.cpp's; engine llama-server has no such flag" in problem
    (problem,) = extra_args_problems("x", ["--port", "1"], FLAGS, "ik_llama.cpp")
    assert "--port is not allowed for engine ik_llama.cpp" in problem


def test_unknown_engines_and_python_engine_flags_are_refused():
    problems = plan({"name": "a", "model": "m.gguf", "port": 1, "engine": "vllm"},
                    {"name": "tiny", "model": "m.gguf", "port": 2, "engine": "llama-cpp-python", "extra_args": ["--temp", "1"]})["problems"]
    assert any("engine 'vllm' is not one of ik_llama.cpp, llama-cpp-python, llama-server" in p for p in problems)
    assert any("engine llama-cpp-python takes none" in p for p in problems), problems


def test_sources_builds_and_their_argv_per_engine():
    assert llama_build_sources([{"engine": "llama-cpp-python"}, {}, {"engine": "ik_llama.cpp"}]) == ["ik_llama.cpp", "llama.cpp"]
    with pytest.raises(AnsibleFilterError, match="instance x: engine 'x' is not one of"):
        llama_build_sources([{"name": "x", "engine": "x"}])
    facts = {"cpuinfer": {"llama_build_class": "arm-armv8.2-a+dotprod+fp16", "arch": "aarch64",
                          "llama_cmake_args": ["-DGGML_NATIVE=OFF"], "runtime": {"glibc": "2.36", "glibcxx": "3.4.30"},
                          "os": {"architecture": "aarch64", "distribution": "Debian", "release": "bookworm", "python": "3.11"}}}
    hostvars = {"k1": {"ansible_facts": facts, "__llama_server_build_sources": ["ik_llama.cpp", "llama.cpp"]},
                "k2": {"ansible_facts": facts, "__llama_server_build_sources": ["llama.cpp"]}}
    ik, mainline = llama_build_classes(["k1", "k2"], hostvars, ["arm-armv8.2-a+dotprod+fp16"])
    assert (ik["source"], ik["hosts"], mainline["source"], mainline["hosts"]) == ("ik_llama.cpp", ["k1"], "llama.cpp", ["k1", "k2"])
    # KleidiAI is mainline's: the fork's build of the class goes without it
    assert "-DGGML_CPU_KLEIDIAI=ON" in mainline["cmake_args"] and "-DGGML_CPU_KLEIDIAI=ON" not in ik["cmake_args"]
    versions = {"llama.cpp": "0.3.36", "ik_llama.cpp": "0.1.5"}
    assert llama_build_argv(ik, versions, "m", "c")[:4] == ["--engine", "ik_llama.cpp", "--version", "0.1.5"]
    assert llama_build_argv(mainline, "0.3.36", "m", "c")[:4] == ["--engine", "llama.cpp", "--version", "0.3.36"]
    with pytest.raises(AnsibleFilterError, match="no pinned release of ik_llama.cpp"):
        llama_build_argv(ik, {"llama.cpp": "0.3.36"}, "m", "c")


def test_the_grid_covers_one_quarters_and_the_top_three():
    assert calibration_grid(32) == [1, 8, 16, 24, 30, 31, 32]
    assert calibration_grid(2) == [1, 2]
    assert calibration_grid(1) == [1]


def test_a_calibration_document_measures_decode_against_the_copy_bound():
    # ik_llama.cpp's llama-bench prints what it does to a mainline DeepSeek GGUF into its JSON report
    noisy = json.dumps(bench({2: (20.0, {512: 300.0})}), indent=2).replace(
        "[\n", "[\n================= Adjusted mainline llama.cpp MLA tensors to ik_llama.cpp\n"
        "Computed blk.0.attn_kv_b.weight as 512 x 2048 of type q8_0 and stored in buffer CPU\n", 1)
    runs = [{"item": [{}, "llama.cpp"], "stdout": json.dumps(bench({2: (10.0, {512: 100.0})}), indent=2)},
            {"item": [{}, "ik_llama.cpp"], "stdout": noisy}]
    model = dict(TINY, bytes_per_token=1000)
    document = calibration_document(runs, model, {"bytes_per_second": 40000}, "k1", "2026-12-04T10:00:00",
                                    {"llama.cpp": {"key": "0.3.36-x"}, "ik_llama.cpp": {"key": "ik-0.1.5-x"}})
    assert document["decode_bound_tokens_per_second"] == 40.0
    assert [(r["engine"], r["decode_of_bound"]) for r in document["results"]] == [("llama-server", 0.25), ("ik_llama.cpp", 0.5)]
    assert document["best"]["engine"] == "ik_llama.cpp" and document["builds"]["ik_llama.cpp"] == "ik-0.1.5-x"
    with pytest.raises(AnsibleFilterError, match="llama_bench_results: not llama-bench's JSON"):
        calibration_document([{"item": [{}, "llama.cpp"], "stdout": '[{"x": 1}]'}], model, {"bytes_per_second": 1},
                             "k1", "d", {})


def test_a_quantised_v_cache_is_refused_only_where_flash_attention_is_turned_off():
    """Both engines run with flash attention on (ik_llama.cpp since our fix of its kernels): a quantised V
    cache is fine there, and refused where the instance's extra_args turn flash attention off."""
    flags = {engine: listed + ["--flash-attn"] for engine, listed in FLAGS.items()}
    for engine in ("ik_llama.cpp", "llama-server"):
        for off in (["--flash-attn", "off"], ["--flash-attn=0"]):
            problems = llama_instances([{"name": "kv", "model": "m.gguf", "port": 1, "engine": engine,
                                         "extra_args": off, "cache_type_v": "q8_0"}],
                                       DEFAULTS, "0-7", CORES, {"kv": TINY}, flags)["problems"]
            assert problems == ["instance kv: a quantised V cache (q8_0) needs flash attention, which its extra_args "
                                "turn off"], (engine, off, problems)
        fine = llama_instances([{"name": "kv", "model": "m.gguf", "port": 1, "engine": engine, "cache_type_k": "q8_0",
                                 "cache_type_v": "q8_0", "extra_args": ["--flash-attn", "on"]}],
                               DEFAULTS, "0-7", CORES, {"kv": TINY}, flags)["problems"]
        assert fine == [], (engine, fine)


def test_a_calibrations_llama_bench_and_its_transient_unit():
    from ansible_collections.cpuinfer.llm.plugins.plugin_utils._filter_engine_settings import llama_bench_argv, measured_under
    mainline = llama_bench_argv("/b/llama-bench", "/m.gguf", 4, "llama.cpp", 3, [128, 512])
    # flash attention on for both engines, as both units run them
    assert mainline == ["/b/llama-bench", "-m", "/m.gguf", "-p", "512", "-n", "64", "-r", "3", "-o", "json",
                        "-t", "1,2,3,4", "-ub", "128,512", "-fa", "1"]
    assert llama_bench_argv("/b/llama-bench", "/m.gguf", 4, "ik_llama.cpp", 3, [128])[-2:] == ["-fa", "1"]
    unit = ["systemd-run", "--wait"]
    assert measured_under(["/bin/x", 5], unit, "2-3") == ["systemd-run", "--wait", "-p", "AllowedCPUs=2-3", "--", "/bin/x", "5"]
    assert measured_under(["/bin/x"], unit, "") == ["systemd-run", "--wait", "--", "/bin/x"]
