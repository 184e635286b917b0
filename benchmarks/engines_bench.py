"""Mainline llama-server vs ik_llama.cpp natively, measured as users get them and like for like.

For each model, each engine's role build for this machine's class: llama-bench (a 512-token prompt, 64
generated, flash attention on, threads = cores) and the engine's own server under the role's flags (f16
cache, 4 slots, threads = cores, the engine flags the role's unit adds: ik_llama.cpp's flash attention on;
mainline's stays at its default, auto, which its CPU backend turns on), fed streamed requests of the same
shape as clients send them: per round a run of requests one after another, then the same number in groups
of 4 at once. Prefill tokens/s = prompt tokens / time to the first token (of the last stream, at 4 streams);
decode tokens/s = tokens after the first / time from the first token to the last (at 4 streams: from the last
stream's first token, while all four decode; measured from the first stream's until 2026-12-05, which counted
a later prompt's prefill as decode time). served / bench says what
the service loses of what the bench shows; max / median over single requests says whether a server slows
down as it serves (a KV cache that grows across slots).

ik_llama.cpp's correctness beside its speed: our flash-attention check (cpuinfer-fa-check, built with every
ik build), the mean token log-likelihood of a fixed text with four sequences in every batch with flash
attention on and off (its perplexity tool), and a storm of concurrent streamed requests of which one in
eight is longer than a slot's context and one in eight has an id no vocabulary has (both refused with a 4xx,
the server still up after).
"""

import hashlib
import json
import os
import subprocess
import sys
from pathlib import Path
from unittest import mock

sys.path[:0] = [str(Path(__file__).resolve().parents[1] / "agent"),
                str(Path(__file__).resolve().parents[1] / ".build" / "collections")]

import engines_serving as serving  # noqa: E402
from cpuinfer_agent import served_rate  # noqa: E402
import machine  # noqa: E402
import stats  # noqa: E402
from common import REPO, add_force, environment, log, role_var, run, run_line, write_report  # noqa: E402
from engine_builds import controller_build_class, q8_model, role_build, role_install, this_machine_facts  # noqa: E402

ENGINES = {"llama-server": "llama.cpp", "ik_llama.cpp": "ik_llama.cpp"}  # engine -> its build's source
GOAL = {"served_of_bench_vs_mainline": 0.9, "max_over_median": 1.3, "prefill": 1.3, "decode": 1.1, "streams": 1.0,
        "likelihood": 0.005, "storm": 200}
# requests started together whose first tokens came further apart than this were not prefilled in one batch
APART_S = 0.1
# ik's server under other options than the role's, on the variants model: what each did to served speed
# (NAME=value: set in the server's environment)
VARIANTS = {"flash attention off (the role before our fix)": ["--flash-attn", "off"],
            "finished slots' cells kept (the tree before our fix)": ["CPUINFER_IK_SLOT_CELLS=keep"],
            "prompt cache in RAM off": ["--cache-ram", "0"], "1 slot": ["--parallel", "1"],
            "defragment above 10 %": ["--defrag-thold", "0.1"]}


def engine_flags(engine):
    """The flags the role's unit adds for the engine (roles/llama_server/vars/main.yml)."""
    return role_var("llama_server", "__llama_server_engine_flags").get(engine, [])


def summary(values):
    """median, range and max / median of one rate."""
    spread = stats.spread(values)
    spread["max_over_median"] = round(spread["max"] / spread["median"], 2)
    return spread


def serve(engine, build, model, cores, rounds, requests, extra=()):
    port = served_rate.free_port()
    is_setting = [not e.startswith("-") and "=" in e for e in extra]
    environment_of_server = dict(e.split("=", 1) for e, setting in zip(extra, is_setting) if setting)
    flags = [e for e, setting in zip(extra, is_setting) if not setting]
    argv = serving.server_argv(ENGINES[engine], build, model, cores, port, list(engine_flags(engine)) + flags)
    # ik_llama.cpp's server writes llama.log into its working directory
    with mock.patch.dict(os.environ, environment_of_server), served_rate.Server(argv, port, model.parent):
        served_rate.completion(port, -1, serving.PROMPT_TOKENS, serving.GENERATED)  # warm-up: the model's pages in
        measured = served_rate.served(port, rounds, requests, serving.SLOTS, serving.PROMPT_TOKENS, serving.GENERATED)
    log("%s %s %s: %s" % (engine, model.name, " ".join(extra) or "role flags",
                          {c: [m["decode"] for m in ms] for c, ms in measured.items()}))
    return {"argv": " ".join(argv[1:]),
            **{streams: {rate: summary([m[rate] for m in ms]) for rate in ("prefill", "decode")}
               for streams, ms in measured.items()},
            "apart": {streams: sum(1 for m in ms if m["first_spread"] > APART_S) for streams, ms in measured.items()},
            "groups": {streams: len(ms) for streams, ms in measured.items()}}


def checks(build, model, cores, storm_requests):
    """ik_llama.cpp's correctness on one model: likelihoods with flash attention on and off, the storm."""
    text = REPO / ".build" / "models" / "likelihood.txt"
    text.write_text("\n\n".join(p.read_text() for p in sorted((REPO / "docs").glob("*.md"))))
    on, off = (serving.mean_log_likelihood(build, model, text, cores, flash, run) for flash in (True, False))
    port = served_rate.free_port()
    argv = serving.server_argv("ik_llama.cpp", build, model, cores, port, engine_flags("ik_llama.cpp"))
    with served_rate.Server(argv, port, model.parent) as server:
        storm = serving.storm(port, storm_requests)
        storm["server_alive_after"] = server.alive()
    turns = {}
    for name, keep in (("role flags", {}), ("cells kept", {"CPUINFER_IK_SLOT_CELLS": "keep"})):
        port = served_rate.free_port()
        argv = serving.server_argv("ik_llama.cpp", build, model, cores, port, engine_flags("ik_llama.cpp"))
        with mock.patch.dict(os.environ, keep), served_rate.Server(argv, port, model.parent):
            turns[name] = serving.second_turn(port)
    return {"likelihood": {"flash_on": round(on, 5), "flash_off": round(off, 5),
                           "relative_difference": round(abs(on - off) / abs(off), 5)}, "storm": storm,
            "second_turn": turns}


def goals(result):
    bench, served = result["bench"], result["served"]

    def kept(engine, rate):  # served / bench at 1 stream
        return served[engine]["1"][rate]["median"] / bench[engine][rate]

    ik, main = served["ik_llama.cpp"], served["llama-server"]
    found = {"served_of_bench": {e: {r: round(kept(e, r), 2) for r in ("prefill", "decode")} for e in ENGINES},
             "ik_kept_vs_mainline": {r: round(kept("ik_llama.cpp", r) / kept("llama-server", r), 2) for r in ("prefill", "decode")},
             "ik_max_over_median": max(ik["1"][r]["max_over_median"] for r in ("prefill", "decode")),
             "ik_vs_mainline_1": {r: round(ik["1"][r]["median"] / main["1"][r]["median"], 2) for r in ("prefill", "decode")},
             "ik_vs_mainline_4": {r: round(ik["4"][r]["median"] / main["4"][r]["median"], 2) for r in ("prefill", "decode")}}
    found["met"] = {
        "kept": min(found["ik_kept_vs_mainline"].values()) >= GOAL["served_of_bench_vs_mainline"],
        "not_bimodal": found["ik_max_over_median"] <= GOAL["max_over_median"],
        "faster_1": found["ik_vs_mainline_1"]["prefill"] >= GOAL["prefill"] and found["ik_vs_mainline_1"]["decode"] >= GOAL["decode"],
        "no_loss_4": min(found["ik_vs_mainline_4"].values()) >= GOAL["streams"]}
    if "checks" in result:
        c = result["checks"]
        found["met"]["likelihood"] = c["likelihood"]["relative_difference"] <= GOAL["likelihood"]
        found["met"]["storm"] = (c["storm"]["server_alive_after"] and c["storm"]["health_after"] == 200
                                 and c["storm"]["fitting_statuses"] == ["200"]
                                 and all(s.startswith("4") for s in c["storm"]["too_long_statuses"]
                                         + c["storm"]["out_of_vocabulary_statuses"]))
    return found


def measure(models, builds, cores, args):
    results = {}
    for label, (path, meta) in models.items():
        result = {"model": path.name, "bytes": meta["bytes"], "bench": {}, "served": {}}
        for engine, source in ENGINES.items():
            result["bench"][engine] = serving.bench(builds[source], path, cores, source, args.repetitions, run)
            result["served"][engine] = serve(engine, builds[source], path, cores, args.rounds, args.requests)
        if label in args.checks:
            result["checks"] = checks(builds["ik_llama.cpp"], path, cores, args.storm)
        if label == args.variants_model:
            result["variants"] = {name: serve("ik_llama.cpp", builds["ik_llama.cpp"], path, cores, 1, args.requests, flags)
                                  for name, flags in VARIANTS.items()}
        result["goal"] = goals(result)
        results[label] = result
    return results


def _rate(cell):
    return "%.1f (%.1f-%.1f)" % (cell["median"], cell["min"], cell["max"])


def markdown(data):
    env = data["environment"]
    lines = ["# Engines: mainline llama-server vs ik_llama.cpp, bench and served", "",
             run_line(env, "; natively, no VM"), "", __doc__.split("\n\n", 1)[1].strip(), "",
             "Builds: %s; threads %d; %d rounds x %d requests; median (min-max)." % (
                 ", ".join("`%s`" % key for key in data["builds"].values()), data["cores"], data["rounds"],
                 data["requests"]), "",
             "Our flash-attention check (`cpuinfer-fa-check %d`, exit %d):" % (data["cores"], data["fa_check"]["returncode"]),
             "", "```", *data["fa_check"]["lines"], "```", ""]
    for label, result in data["models"].items():
        lines += ["## %s (`%s`, %.0f MB)" % (label, result["model"], result["bytes"] / 1e6), "",
                  "| engine | bench prefill | bench decode | streams | served prefill | served decode | max/median |",
                  "|---|---|---|---|---|---|---|"]
        for engine in ENGINES:
            bench = result["bench"][engine]
            for streams in ("1", "4"):
                cell = result["served"][engine][streams]
                lines.append("| %s | %s | %s | %s | %s | %s | %s |" % (
                    engine, bench["prefill"], bench["decode"], streams, _rate(cell["prefill"]), _rate(cell["decode"]),
                    "%.2f / %.2f" % (cell["prefill"]["max_over_median"], cell["decode"]["max_over_median"])))
        lines += ["", "Flags: " + "; ".join("%s llama-bench `%s`, served `%s`" % (
            e, result["bench"][e]["argv"], result["served"][e]["argv"]) for e in ENGINES), ""]
        if all("apart" in result["served"][e] for e in ENGINES):
            lines += ["Groups of 4 started together whose first tokens came more than %.1f s apart (their prompts not "
                      "prefilled in one batch: earlier first tokens for some, decode counted once all four decode): %s." % (
                          APART_S, ", ".join("%s %d of %d" % (e, result["served"][e]["apart"]["4"], result["served"][e]["groups"]["4"])
                                             for e in ENGINES)), ""]
        goal = result["goal"]
        lines += ["served / bench at 1 stream (prefill, decode): %s; ik's over mainline's %.2f, %.2f (goal >= %.1f: %s). "
                  "ik's max / median over single requests %.2f (goal <= %.1f: %s). ik served vs mainline served: 1 stream "
                  "prefill %.2fx, decode %.2fx (goal >= %.1fx, %.1fx: %s); 4 streams %.2fx, %.2fx (goal >= %.1fx: %s)." % (
                      ", ".join("%s %.2f, %.2f" % (e, v["prefill"], v["decode"]) for e, v in goal["served_of_bench"].items()),
                      goal["ik_kept_vs_mainline"]["prefill"], goal["ik_kept_vs_mainline"]["decode"],
                      GOAL["served_of_bench_vs_mainline"], _met(goal, "kept"), goal["ik_max_over_median"],
                      GOAL["max_over_median"], _met(goal, "not_bimodal"), goal["ik_vs_mainline_1"]["prefill"],
                      goal["ik_vs_mainline_1"]["decode"], GOAL["prefill"], GOAL["decode"], _met(goal, "faster_1"),
                      goal["ik_vs_mainline_4"]["prefill"], goal["ik_vs_mainline_4"]["decode"], GOAL["streams"],
                      _met(goal, "no_loss_4")), ""]
        if "checks" in result:
            like, storm = result["checks"]["likelihood"], result["checks"]["storm"]
            lines += ["ik correctness: mean token log-likelihood flash attention on %.4f, off %.4f: %.3f %% apart (goal <= "
                      "%.1f %%: %s). Storm: %d requests from 4 clients at once, %d longer than a slot: those answered %s, "
                      "%d with an id no vocabulary has: %s, the others %s (%d of %d completed); /health after: %s, "
                      "server process %s (%s)." % (
                          like["flash_on"], like["flash_off"], 100 * like["relative_difference"], 100 * GOAL["likelihood"],
                          _met(goal, "likelihood"), storm["requests"], storm["too_long"], "/".join(storm["too_long_statuses"]),
                          storm["out_of_vocabulary"], "/".join(storm["out_of_vocabulary_statuses"]),
                          "/".join(storm["fitting_statuses"]), storm["fitting_ok"],
                          storm["requests"] - storm["too_long"] - storm["out_of_vocabulary"],
                          storm["health_after"], "alive" if storm["server_alive_after"] else "DEAD", _met(goal, "storm")), ""]
            if "second_turn" in result["checks"]:
                lines += ["A conversation's second turn (its first turn and a few more tokens), after another client's "
                          "request: prompt tokens prefilled %s (the rest reused or restored from RAM)." % ", ".join(
                              "%s %d of %d" % (name, t["prefilled"], t["prompt"]) for name, t in result["checks"]["second_turn"].items()),
                          ""]
        if "variants" in result:
            lines += ["ik_llama.cpp's server under other options (1 round; everything else as above):", "",
                      "| options | 1-stream prefill | 1-stream decode | max/median | 4-stream prefill | 4-stream decode | groups "
                      "prefilled apart |", "|---|---|---|---|---|---|---|"]
            rows = [("role flags `%s`" % " ".join(engine_flags("ik_llama.cpp")), result["served"]["ik_llama.cpp"])]
            rows += [("%s `%s`" % (name, " ".join(VARIANTS[name])), cell) for name, cell in result["variants"].items()]
            for name, cell in rows:
                lines.append("| %s | %s | %s | %.2f / %.2f | %s | %s |" % (
                    name, _rate(cell["1"]["prefill"]), _rate(cell["1"]["decode"]), cell["1"]["prefill"]["max_over_median"],
                    cell["1"]["decode"]["max_over_median"], _rate(cell["4"]["prefill"]), _rate(cell["4"]["decode"]))
                    + (" %d of %d apart |" % (cell["apart"]["4"], cell["groups"]["4"]) if "apart" in cell else " |"))
            lines.append("")
    return "\n".join(lines)


def _met(goal, name):
    return "met" if goal["met"].get(name) else "NOT met"


def add_arguments(parser):
    parser.add_argument("--models", nargs="+", default=["llama-250m:Q8_0", "deepseek2-lite-bench:Q8_0", "deepseek2-lite-bench:Q4_K_M"])
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--requests", type=int, default=8, help="requests per round, at each stream count")
    parser.add_argument("--repetitions", type=int, default=3, help="llama-bench repetitions")
    parser.add_argument("--checks", nargs="*", default=["llama-250m Q8_0", "deepseek2-lite-bench Q8_0"],
                        help="models (as 'NAME KIND') on which ik's correctness is checked")
    parser.add_argument("--storm", type=int, default=GOAL["storm"], help="requests in the storm")
    parser.add_argument("--variants-model", default="deepseek2-lite-bench Q8_0")
    add_force(parser)


def main(args):
    problems = machine.check_machine([], args.force, log)
    build_class, cmake_args = controller_build_class()
    python, mainline, dummy_build = role_install(build_class, cmake_args)
    ik = Path(role_build(build_class, cmake_args, "ik_llama.cpp")["archive"][:-len(".tar.gz")])
    cores = len(this_machine_facts()["cpuinfer"]["core_cpus"])
    models = {}
    for spec in args.models:
        name, kind = spec.split(":")
        path = q8_model(python, name, kind)
        digest = hashlib.sha256(path.read_bytes()).hexdigest()
        meta = json.loads(run([sys.executable, REPO / "roles" / "llama_server" / "files" / "check_gguf.py", path, digest],
                              stdout=subprocess.PIPE, text=True).stdout)
        models["%s %s" % (name, kind)] = (path, meta)
    data = {"environment": environment(), "machine_check": problems, "cores": cores, "rounds": args.rounds,
            "requests": args.requests, "builds": {"llama.cpp": mainline.name, "ik_llama.cpp": ik.name},
            "fa_check": serving.fa_check(ik, cores), "goal": GOAL}
    data["models"] = measure(models, {"llama.cpp": mainline, "ik_llama.cpp": ik}, cores, args)
    write_report("engines", data, markdown(data))
