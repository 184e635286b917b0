"""1/2/4/8 concurrent streaming clients, llama-server vs the Python server, natively and in a lab VM.

Both servers from one role build (benchmarks/concurrency/)."""

import json
import os
import subprocess
import sys
import time

import machine
import stats
from common import (EMULATION_NOTE, REPO, add_force, add_vm_options, carried_places, ensure_model,
                    environment, lab, log, playbook, run, run_line, write_report)
from engine_builds import BENCH_BUILD, controller_build_class, q8_model, role_install


def add_arguments(parser):
    parser.add_argument("--clients", type=int, nargs="+", default=[1, 2, 4, 8])
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--tokens", type=int, default=32)
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--n-ctx", type=int, default=256, help="context per slot")
    parser.add_argument("--vm-rounds", type=int, default=2)
    parser.add_argument("--vm-tokens", type=int, default=16)
    parser.add_argument("--skip-native", action="store_true")
    parser.add_argument("--skip-vm", action="store_true")
    add_vm_options(parser)
    add_force(parser)


CONCURRENCY_SLOTS = 8


def native_servers(python, directory, model, threads, n_ctx):
    """llama-server and the Python server of one role build (directory, its venv's python), on loopback."""
    common = ["--host", "127.0.0.1"]
    return {
        "llama-server": [directory / "engine" / "llama-server", "--model", model, "--port", "18091", *common,
                         "--threads", threads, "--threads-batch", threads, "--parallel", CONCURRENCY_SLOTS,
                         "--ctx-size", n_ctx * CONCURRENCY_SLOTS, "--no-webui"],
        "llama-cpp-python": [python, "-m", "llama_cpp.server", "--model", model, "--port", "18092", *common,
                             "--n_threads", threads, "--n_threads_batch", threads, "--n_ctx", n_ctx,
                             "--logits_all", "False", "--verbose", "False", "--interrupt_requests", "False"],
    }


def wait_listening(port, seconds=120):
    import socket
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        with socket.socket() as probe:
            if probe.connect_ex(("127.0.0.1", port)) == 0:
                return
        time.sleep(0.5)
    raise SystemExit("bench: nothing listens on 127.0.0.1:%d" % port)


def concurrency_native(args, python, directory, model):
    commands = native_servers(python, directory, model, args.threads, args.n_ctx)
    processes = [subprocess.Popen([str(a) for a in argv], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
                 for argv in commands.values()]
    try:
        for port in (18091, 18092):
            wait_listening(port)
        config = BENCH_BUILD / "concurrency-native.json"
        config.write_text(json.dumps({"servers": {"llama-server": 18091, "llama-cpp-python": 18092},
                                      "clients": args.clients, "rounds": args.rounds, "tokens": args.tokens}))
        out = run([sys.executable, REPO / "benchmarks" / "concurrency" / "load.py", config], stdout=subprocess.PIPE,
                  text=True, env=dict(os.environ, PYTHONPATH=str(REPO / "roles" / "health_gate" / "files"))).stdout
    finally:
        for process in processes:
            process.terminate()
            process.wait(timeout=30)
    return json.loads(out)["trials"]


VM_MODEL = "llama-bench"  # pinned by sha256 in benchmarks/concurrency/inventory; software emulation is slow


def concurrency_vm(args):
    topology = REPO / "benchmarks" / "concurrency" / "topology.json"
    inventory = REPO / "benchmarks" / "concurrency" / "inventory"
    ensure_model(VM_MODEL)
    if not args.reuse:
        lab("up", "--topology", topology)
    try:
        lab("inventory", "--topology", topology, "--output", inventory / "hosts.yml")
        playbook(inventory, "benchmarks/concurrency/prepare.yml")
        playbook(inventory, "benchmarks/concurrency/measure.yml", "-e", json.dumps(
            {"bench_clients": args.clients, "bench_rounds": args.vm_rounds, "bench_tokens": args.vm_tokens}))
    finally:
        if not args.keep:
            lab("down", *[vm["name"] for vm in json.loads(topology.read_text(encoding="utf-8"))["vms"]])
    return json.loads((REPO / ".build" / "bench-concurrency-raw.json").read_text(encoding="utf-8"))["trials"]


def main(args):
    topology = json.loads((REPO / "benchmarks" / "concurrency" / "topology.json").read_text(encoding="utf-8"))
    problems = machine.check_machine([vm["name"] for vm in topology["vms"]], args.force, log)
    places = {}
    if not args.skip_native:
        python, directory, build = role_install(*controller_build_class())
        model = q8_model(python)
        trials = concurrency_native(args, python, directory, model)
        places["controller (native)"] = {"model": model.name, "threads": args.threads, "tokens": args.tokens,
                                         "rounds": args.rounds, "build": build["key"], "trials": trials}
    if not args.skip_vm:
        trials = concurrency_vm(args)
        places["lab VM (TCG, 2 vCPUs)"] = {"model": VM_MODEL, "threads": 2, "tokens": args.vm_tokens,
                                           "rounds": args.vm_rounds, "trials": trials}
    for place in places.values():
        place["summary"] = stats.summarize_concurrency(place["trials"])
        place["goal_4_clients"] = {server: stats.concurrency_goal(place["summary"], server)
                                   for server in place["summary"] if "4" in place["summary"][server]}
    places = dict(carried_places("concurrency", places), **places)
    data = {"environment": environment(), "machine_check": problems, "note": EMULATION_NOTE, "slots": CONCURRENCY_SLOTS, "places": places}
    write_report("concurrency", data, markdown(data))


def markdown(data):
    env = data["environment"]
    lines = ["# Concurrent clients: llama-server vs the Python server", "",
             run_line(env), "",
             "Both engines from the same role build (one llama.cpp), same model, same threads; llama-server with "
             "%d slots. Interleaved: every round runs every client count against both servers, one trial at a time. "
             "Aggregate tokens/s = all streams' tokens / the trial's wall time (first request to last end). "
             "Goal (issue 15): with 4 clients llama-server delivers >= 2.5x the aggregate tokens/s of 1 client, "
             "with p99 inter-token <= 2x the 1-client p99." % data["slots"], ""]
    for place, result in data["places"].items():
        origin = result.get("measured_by")
        lines += ["## %s" % place, "", "Model %s, %s threads, %d tokens per stream, %d rounds.%s" % (
            result["model"], result["threads"], result["tokens"], result["rounds"],
            " Measured earlier: `%s` (%s, commit %s)." % (origin["command"], origin["date"], origin["commit"])
            if origin else ""), "",
            "| server | clients | aggregate tok/s (median) | per round | per-stream tok/s | TTFT p50 / p99 ms | "
            "inter-token p50 / p99 ms |", "|---|---|---|---|---|---|---|"]
        for server, by_clients in result["summary"].items():
            for clients, s in sorted(by_clients.items(), key=lambda item: int(item[0])):
                lines.append("| %s | %s | %.2f | %s | %.2f | %s / %s | %s / %s |" % (
                    server, clients, s["aggregate_tokens_per_second_median"],
                    " ".join("%.2f" % a for a in s["aggregate_tokens_per_second_per_round"]),
                    s["per_stream_tokens_per_second_median"], s["first_token_p50_ms"], s["first_token_p99_ms"],
                    s["inter_token_p50_ms"], s["inter_token_p99_ms"]))
        lines += [""] + ["- %s, 4 clients vs 1: aggregate %.2fx, p99 inter-token %sx: goal %s" % (
            server, goal["aggregate_speedup"], goal["inter_token_p99_ratio"], "met" if goal["met"] else "NOT met")
            for server, goal in result["goal_4_clients"].items()] + [""]
    return "\n".join(lines)
