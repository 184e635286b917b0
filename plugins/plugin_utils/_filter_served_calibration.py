# -*- coding: utf-8 -*-
# Copyright: cpuinfer.llm contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The served half of a calibration: each engine's own server under the role's flags, measured by the host
agent's cpuinfer-served-rate at 1 stream and at the instance's slots at once; and the engine an instance
with engine auto runs, its class's served winner for its model (llama-bench's ranking of the engines did not
hold for served streams before, docs/benchmarks/engines.md: the service is what is compared).

The code of the served_calibration filters (plugins/filter/served_calibration.py names them)."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import json
import math

from ansible.errors import AnsibleFilterError

SOURCE_ENGINE = {"llama.cpp": "llama-server", "ik_llama.cpp": "ik_llama.cpp"}
# where nothing was measured, and on a tie
DEFAULT_ENGINE = "llama-server"


# the shape of the served runs where the slot allows it (what llama-bench measures: 512 prompt, 64 generated)
PROMPT = 512
GENERATED = 64


def served_rate_argv(binary, agent_bin, model, instance, source, engine_flags, requests):
    """cpuinfer-served-rate starting source's server with the instance's slots, context, cache types, prompt
    cache and ubatch, the flags the role's unit adds for the engine (engine_flags: engine -> flags), on a free loopback
    port, threads = the instance's cores (the same for both engines: the run compares engines, not threads);
    requests of 512 prompt tokens and 64 generated, or less where a slot is smaller."""
    try:
        parallel, cores, n_ctx = int(instance["parallel"]), int(instance["cores"]), int(instance["n_ctx"])
        server = [binary, "--model", model, "--host", "127.0.0.1", "--port", "{port}", "--threads", cores,
                  "--threads-batch", cores, "--parallel", parallel, "--ctx-size", n_ctx * parallel,
                  "--cache-type-k", instance["cache_type_k"], "--cache-type-v", instance["cache_type_v"]]
        if "cache_ram_mib" in instance:
            server += ["--cache-ram", instance["cache_ram_mib"]]
        if instance.get("n_ubatch"):
            server += ["--ubatch-size", instance["n_ubatch"]]
        server += list(engine_flags.get(SOURCE_ENGINE[source], [])) + (
            ["--webui", "none"] if source == "ik_llama.cpp" else ["--no-webui"])
    except (KeyError, TypeError, ValueError) as exc:
        raise AnsibleFilterError("served_rate_argv: the instance lacks %s" % exc)
    generated = min(GENERATED, n_ctx // 4)
    prompt = min(PROMPT, n_ctx - generated - 8)
    return [str(word) for word in [agent_bin + "/cpuinfer-served-rate", "--requests", requests, "--streams", parallel,
                                   "--prompt", prompt, "--generated", generated, 0, "--"] + server]


def served_results(runs):
    """Rows {engine, streams, prompt_tokens_per_second, decode_tokens_per_second} from the registered
    cpuinfer-served-rate runs (item [instance, source], its JSON as stdout)."""
    rows = []
    try:
        for run in runs:
            measured = json.loads(run["stdout"])
            for streams, rates in sorted(measured.items()):
                if streams != "requests":
                    rows.append({"engine": SOURCE_ENGINE[run["item"][1]], "streams": int(streams),
                                 "prompt_tokens_per_second": float(rates["prefill"]),
                                 "decode_tokens_per_second": float(rates["decode"])})
    except (KeyError, TypeError, ValueError, IndexError) as exc:
        raise AnsibleFilterError("served_results: not cpuinfer-served-rate's output: %s" % exc)
    return rows


def served_best(rows):
    """The served winner: the engine whose prefill x decode, multiplied over the stream counts measured,
    is highest (a tie keeps the default engine), with each engine's rates over the other's."""
    engines = sorted(set(row["engine"] for row in rows))
    if not engines:
        return None
    score = {engine: sum(math.log(max(row["prompt_tokens_per_second"], 1e-9)) + math.log(max(row["decode_tokens_per_second"], 1e-9))
                         for row in rows if row["engine"] == engine) for engine in engines}
    winner = max(engines, key=lambda engine: (round(score[engine], 9), engine == DEFAULT_ENGINE))
    by = {}
    for row in rows:
        other = [o for o in rows if o["engine"] != row["engine"] and o["streams"] == row["streams"]]
        if row["engine"] == winner and other:
            by[str(row["streams"])] = {rate: round(row[rate] / other[0][rate], 2) if other[0][rate] else None
                                       for rate in ("prompt_tokens_per_second", "decode_tokens_per_second")}
    return {"engine": winner, "over_the_other": by}


def served_engine(document):
    """The engine a calibration document's served runs chose, None where it has none."""
    best = (document or {}).get("served_best")
    return best.get("engine") if best else None
