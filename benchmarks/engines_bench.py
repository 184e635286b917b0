"""Mainline llama-server vs ik_llama.cpp natively, default vs calibrated threads, against the copy bound.

For each model: the role's builds of both engines for this machine's class; a calibration as the
role's `calibrate` entry point makes it (each engine's llama-bench over thread counts and ubatch,
calibration_document and calibration_best from the collection); then each engine served by its
llama-server with the role's default threads and with the calibrated ones, measured by streamed
clients: 1 and 4 concurrent streams, each a 512-token prompt then 64 generated tokens, repeated and
interleaved. Prefill tokens/s = prompt tokens of all streams / time to the last stream's first token;
decode tokens/s = tokens after the first of all streams / time from the first first token to the last
end. Beside them the STREAM-copy bound of the machine (the host agent's cpuinfer-copy-bandwidth over
the weight bytes one token reads, check_gguf.py's bytes_per_token).
"""

import hashlib
import itertools
import json
import random
import subprocess
import sys
import threading
import time
from pathlib import Path

sys.path[:0] = [str(Path(__file__).resolve().parents[1] / "agent"),
                str(Path(__file__).resolve().parents[1] / ".build" / "collections")]

from cpuinfer_agent import copy_bandwidth, stream_probe  # noqa: E402
from ansible_collections.cpuinfer.llm.plugins.filter import engine_settings  # noqa: E402

import machine  # noqa: E402
import stats  # noqa: E402
from common import REPO, add_force, environment, log, role_default, run, run_line, write_report  # noqa: E402
from engine_builds import controller_build_class, q8_model, role_build, role_install, this_machine_facts  # noqa: E402

ENGINES = {"llama-server": "llama.cpp", "ik_llama.cpp": "ik_llama.cpp"}  # engine -> its build's source
PROMPT_TOKENS = 512
GENERATED = 64
# A port of its own for each server started: one that just stopped leaves its clients' connections in
# TIME_WAIT, and ik_llama.cpp's server cannot bind beside them (it then crashes on its way out).
PORTS = itertools.count(18095)
GOAL = {"prefill": 1.5, "decode": 1.1, "decode_of_bound": 0.8}


def prompt_ids(stream, trial):
    """512 token ids past the specials and byte tokens, different for each stream and trial (no prompt cache)."""
    rng = random.Random(1000 * trial + stream)
    return [rng.randrange(300, 8000) for dummy_index in range(PROMPT_TOKENS)]


def trial(port, clients, index):
    barrier = threading.Barrier(clients)
    streams = [None] * clients

    def one(stream):
        barrier.wait()
        streams[stream] = stream_probe.token_arrivals(port, {
            "prompt": prompt_ids(stream, index), "max_tokens": GENERATED, "stream": True, "temperature": 0,
            "ignore_eos": True, "cache_prompt": False}, timeout=1800)
    workers = [threading.Thread(target=one, args=(s,)) for s in range(clients)]
    for worker in workers:
        worker.start()
    for worker in workers:
        worker.join()
    start = min(s[0] for s in streams)
    firsts = [s[1][0] for s in streams if s[1]]
    decoded = sum(max(len(s[1]) - 1, 0) for s in streams)
    return {"prefill": round(clients * PROMPT_TOKENS / (max(firsts) - start), 2),
            "decode": round(decoded / (max(s[2] for s in streams) - min(firsts)), 2),
            "tokens": [len(s[1]) for s in streams]}


def wait_ready(process, port, seconds=600):
    import urllib.error
    import urllib.request
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        if process.poll() is not None:
            raise SystemExit("bench: the server exited (%s)" % process.returncode)
        try:
            with urllib.request.urlopen("http://127.0.0.1:%d/health" % port, timeout=5) as response:
                if response.status == 200:
                    return
        except (urllib.error.URLError, OSError):
            pass
        time.sleep(0.5)
    raise SystemExit("bench: no /health from the server in %d s" % seconds)


def server_argv(engine, directory, model, config, port):
    """The server as the role's unit starts it (the flags that matter for speed)."""
    argv = [directory / "engine" / "llama-server", "--model", model, "--host", "127.0.0.1", "--port", port,
            "--threads", config["threads"], "--threads-batch", config["threads_batch"], "--parallel", 4,
            "--ctx-size", 4 * (PROMPT_TOKENS + GENERATED + 64), "--metrics"]
    if config.get("n_ubatch"):
        argv += ["--ubatch-size", config["n_ubatch"]]
    return [str(a) for a in argv + (["--webui", "none", "--no-flash-attn"] if engine == "ik_llama.cpp" else ["--no-webui"])]


def serve_and_measure(engine, directory, model, config, rounds, log):
    port = next(PORTS)
    # ik_llama.cpp's server writes llama.log into its working directory
    process = subprocess.Popen(server_argv(engine, directory, model, config, port), stdout=subprocess.DEVNULL,
                               stderr=subprocess.DEVNULL, cwd=model.parent)
    try:
        wait_ready(process, port)
        trial(port, 1, -1)  # warm-up: pages of the model in, threads spun up
        results = {"1": [], "4": []}
        for round_ in range(rounds):
            for clients in (1, 4):
                results[str(clients)].append(trial(port, clients, round_ * 10 + clients))
                log("%s %s %s: %d streams %s" % (engine, model.name, config["label"], clients, results[str(clients)][-1]))
        return results
    finally:
        process.terminate()
        process.wait(timeout=60)


def calibrate(engine, directory, model, cores, repetitions, run):
    argv = engine_settings.llama_bench_argv(directory / "engine" / "llama-bench", model, cores, ENGINES[engine], repetitions,
                                            role_default("llama_server", "llama_server_calibration_ubatch"))
    out = run(argv, stdout=subprocess.PIPE, text=True).stdout
    return {"item": [{}, ENGINES[engine]], "stdout": out}


def summarize(measured):
    return {clients: {what: stats.spread([t[what] for t in trials]) for what in ("prefill", "decode")}
            for clients, trials in measured.items()}


def goals(model_result, bound):
    """The issue's goal on one model: the calibrated best configuration against mainline's default."""
    base = model_result["serving"]["llama-server"]["default"]["1"]
    best_engine = model_result["calibration"]["best"]["engine"]
    best = model_result["serving"][best_engine]["calibrated"]["1"]
    fastest = max((model_result["serving"][e][c]["1"]["decode"]["median"], e, c)
                  for e in model_result["serving"] for c in model_result["serving"][e])
    # decode far below what memory could feed is the CPU's arithmetic, not its memory
    bound_note = "bandwidth-bound" if fastest[0] / bound >= 0.6 else "compute-bound (decode well below the copy bound)"
    served = max((model_result["serving"][e][c]["1"]["decode"]["median"], e) for e in model_result["serving"]
                 for c in model_result["serving"][e])[1]
    return {"calibrated_engine": best_engine, "machine_is": bound_note, "served_fastest_engine": served,
            "prefill_ratio": round(best["prefill"]["median"] / base["prefill"]["median"], 2),
            "decode_ratio": round(best["decode"]["median"] / base["decode"]["median"], 2),
            "best_decode_of_bound": round(fastest[0] / bound, 3), "best_decode_by": "%s %s" % fastest[1:]}


def measure(models, builds, cores, rounds, repetitions, run, log):
    bandwidth = copy_bandwidth.measure()
    log("copy bandwidth %.1f GB/s" % (bandwidth["bytes_per_second"] / 1e9))
    results = {}
    for label, (path, meta) in models.items():
        runs = [calibrate(engine, builds[source], path, cores, repetitions, run) for engine, source in ENGINES.items()]
        document = engine_settings.calibration_document(runs, meta, bandwidth, "controller", "", {
            source: {"key": builds[source].name} for source in ENGINES.values()})
        serving = {}
        for engine, source in ENGINES.items():
            mine = [r for r in document["results"] if r["engine"] == engine]
            best = engine_settings.calibration_best(mine)
            configs = {"default": {"label": "default", "threads": cores, "threads_batch": cores},
                       "calibrated": dict(best, label="calibrated")}
            serving[engine] = {name: serve_and_measure(engine, builds[source], path, config, rounds, log)
                               for name, config in configs.items()}
            serving[engine] = {name: summarize(m) for name, m in serving[engine].items()}
            serving[engine]["settings"] = {"default": configs["default"], "calibrated": best}
        settings = {e: serving[e].pop("settings") for e in serving}
        results[label] = {"model": path.name, "bytes": meta["bytes"], "bytes_per_token": meta["bytes_per_token"],
                          "decode_bound_tokens_per_second": document["decode_bound_tokens_per_second"],
                          "calibration": {"results": document["results"], "best": document["best"]},
                          "settings": settings, "serving": serving}
        results[label]["goal"] = goals(results[label], document["decode_bound_tokens_per_second"])
    return bandwidth, results


def markdown(data):
    env = data["environment"]
    lines = ["# Engines: mainline llama-server vs ik_llama.cpp, default vs calibrated threads", "",
             run_line(env, "; natively, no VM"), "",
             __doc__.split("\n\n", 1)[1].strip(), "",
             "Builds: %s. Copy bandwidth (STREAM Copy, %d processes): %.1f GB/s. %d rounds; median (min-max)." % (
                 ", ".join("`%s`" % key for key in data["builds"].values()), data["bandwidth"]["processes"],
                 data["bandwidth"]["bytes_per_second"] / 1e9, data["rounds"]), ""]
    for label, result in data["models"].items():
        lines += ["## %s (`%s`, %.0f MB, %.1f MB read per token: decode bound %.1f tokens/s)" % (
            label, result["model"], result["bytes"] / 1e6, result["bytes_per_token"] / 1e6,
            result["decode_bound_tokens_per_second"]), "",
            "| engine | threads | streams | prefill tok/s | decode tok/s | decode / bound |", "|---|---|---|---|---|---|"]
        for engine, configs in result["serving"].items():
            for name, by_clients in configs.items():
                s = result["settings"][engine][name]
                for clients, rates in by_clients.items():
                    lines.append("| %s | %s (-t %s -tb %s%s) | %s | %.1f (%.1f-%.1f) | %.1f (%.1f-%.1f) | %.2f |" % (
                        engine, name, s["threads"], s["threads_batch"],
                        " -ub %s" % s["n_ubatch"] if s.get("n_ubatch") else "", clients,
                        rates["prefill"]["median"], rates["prefill"]["min"], rates["prefill"]["max"],
                        rates["decode"]["median"], rates["decode"]["min"], rates["decode"]["max"],
                        rates["decode"]["median"] / result["decode_bound_tokens_per_second"]))
        best = result["calibration"]["best"]
        goal = result["goal"]
        lines += ["", "Calibration (llama-bench, %d configurations): fastest %s with -t %d -tb %d -ub %d "
                  "(decode %.1f, prompt %.1f tokens/s)." % (
                      len(result["calibration"]["results"]), best["engine"], best["threads"], best["threads_batch"],
                      best["n_ubatch"], best["decode_tokens_per_second"], best["prompt_tokens_per_second"]), "",
                  "Goal (calibrated best vs mainline default, 1 stream): prefill %.2fx (goal >= %.1fx: %s), decode %.2fx "
                  "(goal >= %.1fx: %s); the fastest decode (%s) reaches %.2f of the copy bound: on this model the "
                  "machine is %s. llama-bench's favourite, %s, %s when served (1 stream, decode: %s was fastest)." % (
                      goal["prefill_ratio"], GOAL["prefill"], "met" if goal["prefill_ratio"] >= GOAL["prefill"] else "NOT met",
                      goal["decode_ratio"], GOAL["decode"], "met" if goal["decode_ratio"] >= GOAL["decode"] else "NOT met",
                      goal["best_decode_by"], goal["best_decode_of_bound"], goal["machine_is"], goal["calibrated_engine"],
                      "held" if goal["served_fastest_engine"] == goal["calibrated_engine"] else "did NOT hold",
                      goal["served_fastest_engine"]), ""]
    return "\n".join(lines)


def add_arguments(parser):
    parser.add_argument("--models", nargs="+", default=["llama-250m:Q8_0", "deepseek2-lite-bench:Q8_0", "deepseek2-lite-bench:Q4_K_M"])
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--repetitions", type=int, default=3, help="llama-bench repetitions in the calibration")
    add_force(parser)


def main(args):
    problems = machine.check_machine([], args.force, log)
    build_class, cmake_args = controller_build_class()
    python, mainline, dummy_build = role_install(build_class, cmake_args)
    ik = Path(role_build(build_class, cmake_args, "ik_llama.cpp")["archive"][:-len(".tar.gz")])
    models = {}
    for spec in args.models:
        name, kind = spec.split(":")
        path = q8_model(python, name, kind)
        digest = hashlib.sha256(path.read_bytes()).hexdigest()
        meta = json.loads(run([sys.executable, REPO / "roles" / "llama_server" / "files" / "check_gguf.py", path, digest],
                              stdout=subprocess.PIPE, text=True).stdout)
        models["%s %s" % (name, kind)] = (path, meta)
    cores = len(this_machine_facts()["cpuinfer"]["core_cpus"])
    bandwidth, results = measure(models, {"llama.cpp": mainline, "ik_llama.cpp": ik}, cores, args.rounds,
                                 args.repetitions, run, log)
    data = {"environment": environment(), "machine_check": problems, "cores": cores, "rounds": args.rounds,
            "builds": {"llama.cpp": mainline.name, "ik_llama.cpp": ik.name}, "bandwidth": bandwidth, "models": results}
    write_report("engines", data, markdown(data))
