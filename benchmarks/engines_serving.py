"""What the engines benchmark runs on one engine build and model besides the served rates (the host agent's
served_rate, as calibration measures them): the engine's server under the role's flags, llama-bench, a storm
of concurrent requests some of which are too long for a slot, the likelihood of a text with flash attention
on and off, our flash-attention check."""

import math
import random
import re
import subprocess
import json
import threading
import urllib.error
import urllib.request

from cpuinfer_agent import stream_probe
from cpuinfer_agent.served_rate import health, prompt_ids

from ansible_collections.cpuinfer.llm.plugins.plugin_utils import _filter_engine_settings as engine_settings

PROMPT_TOKENS = 512
GENERATED = 64
SLOTS = 4
# a slot holds one request of the measured shape and some room; the storm's long prompts do not fit it
CTX_SIZE = SLOTS * (PROMPT_TOKENS + GENERATED + 64)
# a token id beyond any model's vocabulary
OUT_OF_VOCABULARY = 10_000_000


def server_argv(source, directory, model, threads, port, extra=()):
    """The engine's server as the role's unit starts it (the flags that matter for speed): f16 cache, SLOTS
    slots, and extra: the flags the unit adds for the engine (ik_llama.cpp's flash attention on; mainline's
    is left at auto, which its CPU backend turns on)."""
    argv = [directory / "engine" / "llama-server", "--model", model, "--host", "127.0.0.1", "--port", port,
            "--threads", threads, "--threads-batch", threads, "--parallel", SLOTS, "--ctx-size", CTX_SIZE,
            "--cache-type-k", "f16", "--cache-type-v", "f16", "--metrics"]
    argv += ["--webui", "none"] if source == "ik_llama.cpp" else ["--no-webui"]
    return [str(a) for a in argv + list(extra)]


def storm(port, requests, seed=7):
    """requests sent by SLOTS clients at once, streamed, prompts of random length: one in eight longer than
    a slot's context and one in eight with an id no vocabulary has (the engine must refuse both with a 4xx),
    the rest up to nearly a slot, 16 tokens each. Status of each, and whether the server still answers after."""
    rng = random.Random(seed)
    slot = CTX_SIZE // SLOTS
    lengths = [rng.randrange(slot + 16, 2 * slot) if index % 8 == 3 else rng.randrange(8, slot - 32)
               for index in range(requests)]
    unknown_ids = [index % 8 == 5 for index in range(requests)]
    statuses = [None] * requests
    cursor = iter(range(requests))
    lock = threading.Lock()

    def client():
        while True:
            with lock:
                index = next(cursor, None)
            if index is None:
                return
            prompt = prompt_ids(seed * 10000 + index, lengths[index])
            if unknown_ids[index]:
                prompt[len(prompt) // 2] = OUT_OF_VOCABULARY
            body = {"prompt": prompt, "max_tokens": 16, "stream": True}
            try:
                stream_probe.token_arrivals(port, body, timeout=600)
                statuses[index] = 200
            except urllib.error.HTTPError as exc:
                statuses[index] = exc.code
            except (urllib.error.URLError, OSError, ValueError) as exc:
                statuses[index] = type(exc).__name__
    workers = [threading.Thread(target=client) for dummy_index in range(SLOTS)]
    for worker in workers:
        worker.start()
    for worker in workers:
        worker.join()
    kinds = ["too long" if n >= slot else "unknown id" if unknown else "fitting" for n, unknown in zip(lengths, unknown_ids)]
    too_long, unknown_id, fitting = ([s for s, k in zip(statuses, kinds) if k == kind] for kind in ("too long", "unknown id", "fitting"))
    return {"requests": requests, "too_long": len(too_long), "too_long_statuses": sorted(set(map(str, too_long))),
            "out_of_vocabulary": len(unknown_id), "out_of_vocabulary_statuses": sorted(set(map(str, unknown_id))),
            "fitting_statuses": sorted(set(map(str, fitting))),
            "fitting_ok": sum(1 for s in fitting if s == 200), "health_after": health(port)}


def second_turn(port, turn=300, added=40, seed=11):
    """Prompt tokens a conversation's second turn had to prefill (the server's timings), after another client's
    request came between its turns: added where the first turn's cells were kept or restored, all otherwise."""
    first, other = prompt_ids(seed, turn), prompt_ids(seed + 1, turn)

    def prefilled(prompt):
        body = json.dumps({"prompt": prompt, "n_predict": 4, "temperature": 0, "cache_prompt": True}).encode()
        request = urllib.request.Request("http://127.0.0.1:%d/completion" % port, body, {"Content-Type": "application/json"})
        with urllib.request.urlopen(request, timeout=600) as response:
            return json.loads(response.read())["timings"]["prompt_n"]
    prefilled(first)
    prefilled(other)
    return {"prompt": turn + added, "prefilled": prefilled(first + prompt_ids(seed + 2, added))}


def bench(directory, model, threads, source, repetitions, run):
    """llama-bench of the measured shape with flash attention on (both engines' other defaults: ik's -mla 3
    and fused MoE)."""
    argv = [directory / "engine" / "llama-bench", "-m", model, "-p", PROMPT_TOKENS, "-n", GENERATED,
            "-r", repetitions, "-t", threads, "-fa", "1", "-o", "json"]
    report = engine_settings.bench_json(run(argv, stdout=subprocess.PIPE, text=True, cwd=model.parent).stdout)
    rates = {}
    for test in report:
        rates["prefill" if int(test["n_prompt"]) > 0 else "decode"] = round(float(test["avg_ts"]), 2)
    return {"argv": " ".join(str(a) for a in argv[1:]), **rates}


def mean_log_likelihood(directory, model, text, threads, flash, run):
    """The mean token log-likelihood of text (ln of the perplexity tool's final estimate, negated),
    four 128-token sequences in every batch."""
    argv = [directory / "engine" / "llama-perplexity", "-m", model, "-f", text, "-c", 128, "-b", 512, "--chunks", 16,
            "-t", threads, "-fa", "on" if flash else "off"]
    # ik_llama.cpp's tools write llama.log into their working directory: the model's, not the checkout
    out = run(argv, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, cwd=model.parent).stdout
    # "Final estimate: PPL = X +/- E", or "... PPL over N chunks for n_ctx=C = X +/- E"
    found = re.search(r"Final estimate: PPL.*?= ([0-9.]+) \+/-", out)
    if not found:
        raise SystemExit("bench: no final estimate from llama-perplexity:\n" + out[-2000:])
    return -math.log(float(found.group(1)))


def fa_check(directory, threads):
    """Our flash-attention check (built with every ik_llama.cpp build): its verdict and lines."""
    done = subprocess.run([str(directory / "engine" / "cpuinfer-fa-check"), str(threads)], capture_output=True,
                          text=True, check=False)
    return {"returncode": done.returncode, "lines": done.stdout.splitlines() + done.stderr.splitlines()[-3:]}
