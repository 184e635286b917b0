"""Streamed requests through a front door while a canary rollout restarts every instance.

A steady open-loop load of streamed completions (benchmarks/rollout/load.py) runs through one address
while playbooks/canary.yml rolls out a change that restarts every instance. The variants run on the same
VMs, one after the other:
  no front door       - the clients talk to one host's instance directly; no drain (nothing to drain in);
  front door, no drain - the clients talk to the front door; llama_server_frontdoor_hosts is empty, so the
                         restarts do not drain (the front door only notices through its /health checks);
  front door, drain    - the default: each restart drains the instance on the front door first;
  control: no change   - the same playbook through the front door with nothing to change (no restart): the
                         TTFT ratio that running Ansible beside the emulated VMs causes by itself.
Every variant's instances also have the stop that waits for requests in flight (ExecStop), as shipped.
"""

import json
import subprocess
import sys
import time

import machine
from common import (REPO, add_force, add_vm_options, ensure_model, environment, lab, lab_forwarded, log, playbook,
                    run_line, write_report)

VARIANTS = (
    {"name": "no front door", "address": "instance", "drain": False, "restarts": True},
    {"name": "front door, no drain", "address": "frontdoor", "drain": False, "restarts": True},
    {"name": "front door, drain", "address": "frontdoor", "drain": True, "restarts": True},
    # the same playbook run, changing nothing: what running Ansible beside the VMs alone does to TTFT on
    # this 2-core machine (the controller and the emulated CPUs share it), so the ratios above can be read
    {"name": "control: no change", "address": "frontdoor", "drain": True, "restarts": False},
)


def weights(variants, first=100):
    """The CPUWeight each rollout sets: flipped between 90 and 100 for a variant that restarts every
    instance, kept for one that must change nothing."""
    current, chosen = first, []
    for variant in variants:
        if variant["restarts"]:
            current = 90 if current == 100 else 100
        chosen.append(current)
    return chosen


def extra_vars(variant, weight):
    """The rollout's extra vars: the change (every unit's CPUWeight) and, without drain, no front doors."""
    values = {"bench_cpu_weight": weight}
    if not variant["drain"]:
        values["llama_server_frontdoor_hosts"] = []
    return values


def ratio(rollout, steady):
    if rollout is None or not steady:
        return None
    return round(rollout / steady, 2)


def row(run):
    summary = run["summary"]
    steady, during = summary.get("ttft_p99_s_steady"), summary.get("ttft_p99_s_rollout")
    return {"variant": run["variant"], "repeat": run["repeat"], "sent": summary["sent"],
            "completed": summary["completed"], "failed": summary["failed"], "truncated": summary["truncated"],
            "ttft_p99_steady_s": steady, "ttft_p99_rollout_s": during, "ttft_ratio": ratio(during, steady),
            "rollout_seconds": run["rollout_seconds"]}


def goal(rows):
    """Drain's goal: no request failed or truncated, p99 TTFT during the rollout within 2x steady."""
    drained = [r for r in rows if r["variant"] == "front door, drain"]
    if not drained:
        return None
    return all(r["failed"] == 0 and r["truncated"] == 0 and r["ttft_ratio"] is not None and r["ttft_ratio"] <= 2.0
               for r in drained)


def _seconds(value):
    return "-" if value is None else "%.2f" % value


def markdown(data):
    rows = [row(run) for run in data["runs"]]
    lines = [
        "# Rollout under load: what clients see",
        "",
        run_line(data["environment"]) + " Two lab VMs of one vCPU (software emulation), one instance of the generated "
        "llama-tiny model with 2 slots each; the front door (HAProxy) on bench-roll-1. Load: a streamed "
        "completion of %d tokens (`ignore_eos`) every %.1f s through the `openai` client, open loop; %d s steady, "
        "then `playbooks/canary.yml` restarts every instance, then %d s more. A request is *completed* when its "
        "stream ends with finish_reason `length`, *truncated* when it ends cleanly before, *failed* when the "
        "client raised." % (data["tokens"], data["interval"], data["steady_seconds"], data["after_seconds"]),
        "",
        "| variant | repeat | sent | completed | failed | truncated | p99 TTFT steady | p99 TTFT rollout | ratio | rollout s |",
        "|---|---|---|---|---|---|---|---|---|---|",
    ]
    for r in rows:
        lines.append("| %s | %d | %d | %d | %d | %d | %s | %s | %s | %d |" % (
            r["variant"], r["repeat"] + 1, r["sent"], r["completed"], r["failed"], r["truncated"],
            _seconds(r["ttft_p99_steady_s"]), _seconds(r["ttft_p99_rollout_s"]),
            "-" if r["ttft_ratio"] is None else "%.2f" % r["ttft_ratio"], r["rollout_seconds"]))
    verdict = goal(rows)
    lines += ["", "Goal (front door with drain: 0 failed, 0 truncated, p99 TTFT during the rollout <= 2x steady): %s."
              % {True: "met", False: "not met", None: "not measured"}[verdict], ""]
    failures = [(run["variant"], request) for run in data["runs"] for request in run["requests"]
                if request["outcome"] != "completed"]
    if failures:
        lines += ["Requests that did not complete (first 12):", ""]
        for variant, request in failures[:12]:
            lines.append("- %s, request %d (%s): %s%s" % (variant, request["index"], request["phase"], request["outcome"],
                                                          ", " + request["error"] if request["error"] else ""))
        lines.append("")
    lines += ["What emulation can and cannot show: the counts of failed and truncated requests depend on the order "
              "of drain, stop and checks, not on speed, so they carry to real hosts; times to first token under "
              "TCG are tens of times a real host's, and their ratio mixes the queueing the rollout causes with the "
              "emulator's own noise on a 2-core machine.", ""]
    if data.get("machine_check"):
        lines += ["Machine check before measuring: %s" % "; ".join(data["machine_check"]), ""]
    return "\n".join(lines)


def add_arguments(parser):
    parser.add_argument("--repeats", type=int, default=1, help="rounds of the four variants")
    parser.add_argument("--tokens", type=int, default=32)
    parser.add_argument("--interval", type=float, default=1.0, help="seconds between request starts (open loop)")
    parser.add_argument("--steady-seconds", type=int, default=30)
    parser.add_argument("--after-seconds", type=int, default=15)
    add_vm_options(parser, "VMs")
    add_force(parser)


def rollout_variant(variant, repeat, weight, inventory, args):
    """One rollout of every instance under the load, through the variant's address; what each request saw."""
    if variant["address"] == "frontdoor":
        port = lab_forwarded("bench-roll-1", 9081)
    else:
        port = lab_forwarded("bench-roll-2", 8081)
    url = "http://127.0.0.1:%d/v1" % port
    scratch = REPO / ".build" / "bench-rollout"
    scratch.mkdir(parents=True, exist_ok=True)
    stop, phase = scratch / "stop", scratch / "phase"
    stop.unlink(missing_ok=True)
    phase.write_text("steady\n", encoding="utf-8")
    log("rollout: %s (repeat %d) through %s" % (variant["name"], repeat + 1, url))
    load = subprocess.Popen([sys.executable, REPO / "benchmarks" / "rollout" / "load.py", "--base-url", url,
                             "--model", "tiny-llama", "--api-key", "bench-key-0123456789abcdef",
                             "--tokens", str(args.tokens), "--interval", str(args.interval), "--stop-file", stop,
                             "--phase-file", phase], stdout=subprocess.PIPE, text=True)
    try:
        time.sleep(args.steady_seconds)
        phase.write_text("rollout\n", encoding="utf-8")
        seconds, dummy_output = playbook(inventory, "playbooks/canary.yml", "-e",
                                         json.dumps(extra_vars(variant, weight)))
        phase.write_text("after\n", encoding="utf-8")
        time.sleep(args.after_seconds)
    finally:
        stop.write_text("", encoding="utf-8")
        output, dummy_errors = load.communicate(timeout=900)
    measured = json.loads(output)
    log("rollout: %s: %s" % (variant["name"], measured["summary"]))
    return {"variant": variant["name"], "repeat": repeat, "rollout_seconds": round(seconds), **measured}


def main(args):
    topology = REPO / "benchmarks" / "rollout" / "topology.json"
    inventory = REPO / "benchmarks" / "rollout" / "inventory"
    vm_names = [vm["name"] for vm in json.loads(topology.read_text(encoding="utf-8"))["vms"]]
    problems = machine.check_machine(vm_names, args.force, log)
    ensure_model("llama-tiny")
    if not args.reuse:
        lab("up", "--topology", topology)
    runs = []
    try:
        lab("inventory", "--topology", topology, "--output", inventory / "hosts.yml")
        playbook(inventory, "playbooks/site.yml")
        schedule = weights(list(VARIANTS) * args.repeats)
        for repeat in range(args.repeats):
            for variant in VARIANTS:
                # a rollout that restarts flips every unit's CPUWeight, so every instance restarts
                runs.append(rollout_variant(variant, repeat, schedule[len(runs)], inventory, args))
    finally:
        if not args.keep:
            lab("down", *vm_names)
    data = {"environment": environment(), "tokens": args.tokens, "interval": args.interval,
            "steady_seconds": args.steady_seconds, "after_seconds": args.after_seconds, "machine_check": problems,
            "runs": runs}
    write_report("rollout", data, markdown(data))
