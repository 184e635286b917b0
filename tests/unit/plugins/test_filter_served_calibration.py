"""The served half of a calibration: cpuinfer-served-rate's command line from an instance, its output into
a calibration document, the served winner, and engine auto taking it."""

import json

import pytest
from ansible.errors import AnsibleFilterError

from ansible_collections.cpuinfer.llm.plugins.plugin_utils._filter_engine_settings import calibration_document
from ansible_collections.cpuinfer.llm.plugins.plugin_utils._filter_llama import llama_instances
from ansible_collections.cpuinfer.llm.plugins.plugin_utils._filter_served_calibration import served_best, served_rate_argv, served_results

INSTANCE = {"name": "tiny", "parallel": 4, "cores": 8, "n_ctx": 640, "cache_type_k": "f16", "cache_type_v": "q8_0",
            "n_ubatch": 256}
TINY = {"bytes": 293504, "layers": 2, "head_count": 4, "head_count_kv": 2, "key_length": 16, "value_length": 16,
        "context_length": 1024, "sha256": "a" * 64}
DEFAULTS = {"n_ctx": 512, "cpu_quota": 0, "memory_high": "", "memory_max": "", "engine": "llama-server", "parallel": 1,
            "cache_type_k": "f16", "cache_type_v": "f16", "extra_args": [], "n_ubatch": 0, "numa": ""}
FLAGS = {"llama-server": ["--temp"], "ik_llama.cpp": ["--temp"]}


def run(source, one, many, streams=4):
    return {"item": [INSTANCE, source], "stdout": json.dumps({"1": {"prefill": one[0], "decode": one[1]},
                                                              str(streams): {"prefill": many[0], "decode": many[1]},
                                                              "requests": 4})}


def test_the_measured_server_has_the_instances_slots_context_cache_and_the_engines_unit_flags():
    argv = served_rate_argv("/b/engine/llama-server", "/opt/agent/bin", "/m/a.gguf", INSTANCE, "ik_llama.cpp",
                            {"ik_llama.cpp": ["--flash-attn", "on"], "llama-server": []}, 4)
    # a free port (0), put in place of {port}; the measured shape fits the instance's 640-token slot
    assert argv[:11] == ["/opt/agent/bin/cpuinfer-served-rate", "--requests", "4", "--streams", "4", "--prompt", "512",
                         "--generated", "64", "0", "--"]
    server = " ".join(argv[11:])
    assert server.startswith("/b/engine/llama-server --model /m/a.gguf --host 127.0.0.1 --port {port} ")
    for words in ("--threads 8 --threads-batch 8", "--parallel 4 --ctx-size 2560", "--cache-type-v q8_0",
                  "--ubatch-size 256", "--flash-attn on --webui none"):
        assert words in server
    mainline = served_rate_argv("/b/engine/llama-server", "/a", "/m", dict(INSTANCE, n_ubatch=0), "llama.cpp", {}, 2)
    assert mainline[-1] == "--no-webui" and "--ubatch-size" not in mainline
    with pytest.raises(AnsibleFilterError, match="lacks 'parallel'"):
        served_rate_argv("/b", "/a", "/m", {"cores": 1}, "llama.cpp", {}, 2)


def test_a_small_slot_gets_requests_that_fit_it():
    argv = served_rate_argv("/b", "/a", "/m", dict(INSTANCE, n_ctx=256), "llama.cpp", {}, 4)
    shape = dict(zip(argv[5:9:2], argv[6:10:2]))
    assert shape == {"--prompt": "184", "--generated": "64"}
    assert int(shape["--prompt"]) + int(shape["--generated"]) < 256


def test_the_served_winner_must_win_over_both_stream_counts():
    faster_alone = served_results([run("llama.cpp", (900, 180), (900, 250)), run("ik_llama.cpp", (1200, 200), (850, 160))])
    assert [(r["engine"], r["streams"]) for r in faster_alone] == [
        ("llama-server", 1), ("llama-server", 4), ("ik_llama.cpp", 1), ("ik_llama.cpp", 4)]
    # ik: 1.33 x 1.11 alone but 0.94 x 0.64 at four streams: the product over both is mainline's
    assert served_best(faster_alone)["engine"] == "llama-server"
    faster = served_results([run("llama.cpp", (900, 180), (900, 250)), run("ik_llama.cpp", (1200, 200), (950, 260))])
    best = served_best(faster)
    assert best["engine"] == "ik_llama.cpp"
    assert best["over_the_other"]["1"] == {"prompt_tokens_per_second": 1.33, "decode_tokens_per_second": 1.11}
    # a tie keeps the default engine; nothing measured, no winner
    tie = served_results([run("llama.cpp", (900, 180), (900, 250)), run("ik_llama.cpp", (900, 180), (900, 250))])
    assert served_best(tie)["engine"] == "llama-server" and served_best([]) is None
    with pytest.raises(AnsibleFilterError, match="not cpuinfer-served-rate's output"):
        served_results([{"item": [INSTANCE, "llama.cpp"], "stdout": "Traceback"}])


def test_the_calibration_document_keeps_the_served_runs_and_their_winner():
    bench = [{"item": [{}, "llama.cpp"], "stdout": json.dumps([
        {"n_threads": 2, "n_prompt": 512, "n_gen": 0, "n_ubatch": 512, "avg_ts": 100.0},
        {"n_threads": 2, "n_prompt": 0, "n_gen": 64, "n_ubatch": 512, "avg_ts": 10.0}])}]
    served = [run("llama.cpp", (900, 180), (900, 250)), run("ik_llama.cpp", (1200, 200), (950, 260))]
    document = calibration_document(bench, TINY, {"bytes_per_second": 40000}, "k1", "d", {}, served)
    assert len(document["served"]) == 4 and document["served_best"]["engine"] == "ik_llama.cpp"
    assert calibration_document(bench, TINY, {"bytes_per_second": 40000}, "k1", "d", {})["served_best"] is None


def plan(engine, document):
    return llama_instances([{"name": "tiny", "model": "m.gguf", "model_sha256": "a" * 64, "port": 8081, "engine": engine}],
                           DEFAULTS, "0-7", [str(c) for c in range(8)], {"tiny": TINY}, FLAGS, {}, [],
                           {"a" * 64: document} if document else None)


def test_engine_auto_takes_the_classes_served_winner_and_says_so():
    document = {"results": [], "served_best": {"engine": "ik_llama.cpp"}}
    (instance,) = plan("auto", document)["instances"]
    assert (instance["engine"], instance["source"], instance["settings_from"]["engine"]) == (
        "ik_llama.cpp", "ik_llama.cpp", "calibration")
    # without a served calibration (none, or one from before served runs): the default engine
    for missing in (None, {"results": []}):
        (instance,) = plan("auto", missing)["instances"]
        assert (instance["engine"], instance["settings_from"]["engine"]) == ("llama-server", "default")
    # a named engine stays whatever was served fastest
    (named,) = plan("llama-server", document)["instances"]
    assert (named["engine"], named["settings_from"]["engine"]) == ("llama-server", "given")
