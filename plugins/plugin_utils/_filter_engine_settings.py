# -*- coding: utf-8 -*-
# Copyright: cpuinfer.llm contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""How an instance runs its engine: threads, batch threads and ubatch (given, calibrated for its engine,
or derived), and llama.cpp's --numa mode from where the instance is placed.

The code of the engine_settings filters (plugins/filter/engine_settings.py names them)."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import json

from ansible.errors import AnsibleFilterError
from ansible_collections.cpuinfer.llm.plugins.plugin_utils._filter_served_calibration import (
    DEFAULT_ENGINE, SOURCE_ENGINE, served_best, served_engine, served_results)
from ansible_collections.cpuinfer.llm.plugins.module_utils._cpulist import parse_cpulist

# The settings whose origin an instance reports (settings_from): given, calibration or derived; the
# engine given, the default, or (engine auto) the calibration's served winner.
CALIBRATED_KEYS = ("engine", "threads", "threads_batch", "n_ubatch")


def numa_mode(allowed_cpus, placed, numa_nodes):
    """llama.cpp's --numa for an instance: none on a one-node host; numactl (threads kept on the CPUs
    the unit gives it) where it is placed on one node or its CPUs lie in one; distribute (threads
    spread over the nodes, each touching its share of the model first) where it spans nodes."""
    nodes = [parse_cpulist(node["cpus"]) for node in numa_nodes or [] if node.get("cpus")]
    if len(nodes) <= 1:
        return ""
    if placed:
        return "numactl"
    cpus = parse_cpulist(allowed_cpus) if allowed_cpus else set().union(*nodes)
    spanned = sum(1 for node in nodes if node & cpus)
    return "distribute" if spanned > 1 else "numactl"


def _whole(value, what, problems):
    number = None
    if not isinstance(value, bool):
        try:
            number = int(str(value).strip())
        except ValueError:
            pass
    if number is None or number < 0:
        problems.append("%s %r is not a whole number (0 or more)" % (what, value))
        return 0
    return number


def resolve_engine(instance, calibrations):
    """An instance's engine auto as the engine its model's calibration on its class served fastest
    (calibrations: model sha256 -> calibration document), the default engine where none was served."""
    if instance.get("engine") == "auto":
        instance["engine"] = served_engine((calibrations or {}).get(instance.get("model_sha256"))) or DEFAULT_ENGINE


def engine_settings(instance, given, cores, calibrations, problems):
    """Sets instance's threads, threads_batch, n_ubatch and settings_from (where each, and the engine, came
    from): the instance's own value (0: none), else its model's calibration on its class for its engine
    (calibrations: model sha256 -> calibration document; threads no more than its cores), else derived
    (threads = its cores, batch threads = threads, the engine's ubatch)."""
    name = instance.get("name", "?")
    document = (calibrations or {}).get(instance.get("model_sha256")) or {}
    origin = {"engine": "given" if "engine" in given else "default"}
    if given.get("engine") == "auto":
        origin["engine"] = "calibration" if served_engine(document) else "default"
    # A named engine stays the instance's whatever a calibration measured; engine auto takes the served
    # winner (resolve_engine), never llama-bench's favourite.
    results = [r for r in document.get("results") or [] if r.get("engine") == instance["engine"]]
    best = calibration_best(results) if results else {}
    values = {}
    for key in ("threads", "threads_batch", "n_ubatch"):
        value = _whole(given[key], "instance %s: %s" % (name, key), problems) if key in given else 0
        if value:
            values[key], origin[key] = value, "given"
        elif key in best and (key == "n_ubatch" or best[key] <= cores):
            values[key], origin[key] = best[key], "calibration"
    instance["threads"] = values.get("threads") or cores
    instance["threads_batch"] = values.get("threads_batch") or instance["threads"]
    if "n_ubatch" in values:
        instance["n_ubatch"] = values["n_ubatch"]
    instance["settings_from"] = {key: origin.get(key, "derived") for key in CALIBRATED_KEYS}


def calibration_best(results):
    """The fastest configuration in a calibration's results ([{engine, threads, threads_batch, n_ubatch,
    prompt_tokens_per_second, decode_tokens_per_second}]): the engine whose best decode times best
    prefill is highest; in it, the threads of the best decode and the batch threads and ubatch of the
    best prefill (llama.cpp runs decode on --threads and prompt batches on --threads-batch)."""
    try:
        engines = sorted(set(r["engine"] for r in results))
        if not engines:
            raise AnsibleFilterError("calibration_best: no results")

        def best(engine, rate):
            return max((r for r in results if r["engine"] == engine), key=lambda r: (float(r[rate]), -int(r["threads"])))
        score = {e: float(best(e, "decode_tokens_per_second")["decode_tokens_per_second"])
                 * float(best(e, "prompt_tokens_per_second")["prompt_tokens_per_second"]) for e in engines}
        engine = max(engines, key=lambda e: (score[e], e == "llama-server"))
        decode, prompt = best(engine, "decode_tokens_per_second"), best(engine, "prompt_tokens_per_second")
        return {"engine": engine, "threads": int(decode["threads"]), "threads_batch": int(prompt["threads_batch"]),
                "n_ubatch": int(prompt["n_ubatch"]),
                "decode_tokens_per_second": float(decode["decode_tokens_per_second"]),
                "prompt_tokens_per_second": float(prompt["prompt_tokens_per_second"])}
    except (KeyError, TypeError, ValueError) as exc:
        raise AnsibleFilterError("calibration_best: each result needs engine, threads, threads_batch, n_ubatch and "
                                 "both rates: %s" % exc)


def llama_bench_results(report, engine):
    """Rows for calibration_best from llama-bench's JSON (-o json) of one engine: per threads and ubatch,
    the prompt rate (a prompt-only test) and the decode rate at those threads (a generation-only test)."""
    prompt, decode = {}, {}
    try:
        for test in report:
            threads, rate = int(test["n_threads"]), float(test["avg_ts"])
            if int(test["n_prompt"]) > 0 and int(test["n_gen"]) == 0:
                prompt[(threads, int(test["n_ubatch"]))] = rate
            elif int(test["n_gen"]) > 0 and int(test["n_prompt"]) == 0:
                decode[threads] = max(rate, decode.get(threads, 0.0))
    except (KeyError, TypeError, ValueError) as exc:
        raise AnsibleFilterError("llama_bench_results: not llama-bench's JSON output: %s" % exc)
    return [{"engine": engine, "threads": threads, "threads_batch": threads, "n_ubatch": ubatch,
             "prompt_tokens_per_second": round(rate, 2), "decode_tokens_per_second": round(decode[threads], 2)}
            for (threads, ubatch), rate in sorted(prompt.items()) if threads in decode]


def calibration_grid(cores):
    """Thread counts a calibration tries on an instance of `cores` cores: 1, quarters of it, and the top
    three (decode often peaks just below the core count; an odd count can be far off an even one)."""
    cores = max(int(cores), 1)
    return sorted(set(c for c in [1, cores // 4, cores // 2, (3 * cores) // 4, cores - 2, cores - 1, cores] if c >= 1))


def llama_bench_argv(binary, model, cores, source, repetitions, ubatch):
    """A calibration's llama-bench of one engine source: a prompt of 512 tokens and 64 generated (the
    served runs' shape), JSON, over calibration_grid(cores) threads and the ubatch sizes, flash attention
    on, as both engines' units run."""
    argv = [str(binary), "-m", str(model), "-p", "512", "-n", "64", "-r", str(int(repetitions)), "-o", "json",
            "-t", ",".join(str(t) for t in calibration_grid(cores)), "-ub", ",".join(str(int(u)) for u in ubatch)]
    return argv + ["-fa", "1"]


def measured_under(command, measure_argv, allowed_cpus=""):
    """command run by measure_argv (a transient unit: systemd-run ...), on allowed_cpus when given."""
    return list(measure_argv) + (["-p", "AllowedCPUs=%s" % allowed_cpus] if allowed_cpus else []) + ["--"] + [
        str(word) for word in command]


def bench_json(text):
    """llama-bench's JSON report from its standard output. ik_llama.cpp's also prints what it does to a
    model while loading it ("Computed blk.0.attn_kv_b.weight ...") into the middle of the report: lines a
    pretty-printed JSON report cannot hold (not a bracket, brace or indented) are dropped."""
    return json.loads("\n".join(line for line in text.splitlines() if line[:1] in ("[", "]", "{", "}", " ", "\t")))


def calibration_document(runs, model, bandwidth, host, date, builds, served_runs=None):
    """The file a calibration keeps for one class and model: where and when it ran (host, date, the key
    of each build: builds is source -> build report), every result (runs: the registered llama-bench runs,
    item [instance, source] and llama-bench's JSON as stdout), the fastest configuration, each result's
    decode against the bound the host's copy bandwidth puts on it, and each engine served (served_runs:
    the registered cpuinfer-served-rate runs) with the served winner."""
    results = []
    try:
        for run in runs:
            results += llama_bench_results(bench_json(run["stdout"]), SOURCE_ENGINE[run["item"][1]])
        per_token = int(model.get("bytes_per_token") or model["bytes"])
        bound = float(bandwidth["bytes_per_second"]) / per_token
        keys = {source: build["key"] for source, build in builds.items()}
        served = served_results(served_runs or [])
    except (KeyError, TypeError, ValueError, IndexError) as exc:
        raise AnsibleFilterError("calibration_document: %s" % exc)
    for row in results:
        row["decode_of_bound"] = round(row["decode_tokens_per_second"] / bound, 3)
    return {"host": host, "date": date, "builds": keys, "model_sha256": model["sha256"],
            "bytes_per_token": per_token, "copy_bytes_per_second": bandwidth["bytes_per_second"],
            "decode_bound_tokens_per_second": round(bound, 2), "results": results,
            "best": calibration_best(results) if results else None,
            "served": served, "served_best": served_best(served)}
