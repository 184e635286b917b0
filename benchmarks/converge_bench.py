"""First converge vs re-converge, 1 host vs 3 hosts, wheel builds per run, controller CPU per run.

playbooks/site.yml on fresh lab VMs (benchmarks/converge/)."""

import json
import re
import time

import machine
import stats
from common import (EMULATION_NOTE, PLAYBOOK_ENV, REPO, committed_report, ensure_model, environment, lab, log,
                    playbook, run_line, write_report)


def add_arguments(parser):
    parser.add_argument("--wheel-cache", help="a wheel cache directory (an empty one counts the builds of a cold run)")
    parser.add_argument("--keep", action="store_true", help="leave the last converged VMs running")
    parser.add_argument("--hosts", default="1,3", help="host counts to measure (1,3); the others are carried from the committed report")
    machine.add_options(parser, repeats=3)


RECAP = re.compile(r"^(\S+)\s+: ok=(\d+)\s+changed=(\d+)\s+unreachable=(\d+)\s+failed=(\d+)", re.M)
# roles/llama_server/tasks/engines.yml names it so (tests/unit/benchmarks keeps the two equal)
WHEEL_TASK = "TASK [cpuinfer.llm.llama_server : Build each engine source once per CPU class and release]"


def recap(output):
    return {m.group(1): {"ok": int(m.group(2)), "changed": int(m.group(3)), "unreachable": int(m.group(4)),
                         "failed": int(m.group(5))} for m in RECAP.finditer(output)}


def wheel_builds(output):
    """'changed' items of the role's build task: a wheel was compiled (a cache hit reports ok)."""
    if WHEEL_TASK not in output:
        return 0
    section = output.split(WHEEL_TASK, 1)[1].split("\nTASK [", 1)[0]
    return sum(1 for line in section.splitlines() if line.startswith("changed:"))


def main(args):
    topology_path = REPO / "benchmarks" / "converge" / "topology.json"
    inventory = REPO / "benchmarks" / "converge" / "inventory"
    vms = json.loads(topology_path.read_text(encoding="utf-8"))["vms"]
    ensure_model("llama-tiny")
    problems = machine.check_machine([vm["name"] for vm in vms], args.force, log)
    extra = ["-e", "llama_server_build_cache=%s" % args.wheel_cache] if args.wheel_cache else []
    counts = sorted(set(int(c) for c in args.hosts.split(",")))
    runs = []
    for repeat in range(args.repeats):
        for count in counts:
            runs += converge_hosts(vms[:count], inventory, topology_path, extra, args, repeat)
            if not (args.keep and count == counts[-1] and repeat == args.repeats - 1):
                lab("down", *[vm["name"] for vm in vms[:count]])
    data = {"environment": environment(), "note": EMULATION_NOTE, "wheel_cache": args.wheel_cache or "the default",
            "playbook_env": PLAYBOOK_ENV, "repeats": args.repeats,
            "conditions": {"machine_check": problems, "pinned": args.pin},
            "reconverge_over_first": reconverge_ratios(runs), "runs": runs + carried_runs(counts)}
    write_report("converge", data, markdown(data))


def converge_hosts(vms, inventory, topology_path, extra, args, repeat):
    """Boot `vms` fresh (pinned unless --no-pin), run site.yml twice on them; the two runs' figures."""
    names = [vm["name"] for vm in vms]
    lab("down", *names)
    started = time.monotonic()
    lab("up", "--specs", json.dumps(vms), *(["--pin"] if args.pin else []))
    boot_s = time.monotonic() - started
    lab("inventory", "--topology", topology_path, "--output", inventory / "hosts.yml")
    runs = []
    for attempt in ("first converge", "re-converge"):
        usage = {}
        seconds, output = playbook(inventory, "playbooks/site.yml", *extra, usage=usage)
        # the target check's play runs on localhost: only the lab hosts are counted
        hosts = {name: counts for name, counts in recap(output).items() if name != "localhost"}
        if sorted(hosts) != sorted(names) or any(h["failed"] or h["unreachable"] for h in hosts.values()):
            raise SystemExit("bench: %s on %s did not succeed: %s" % (attempt, names, hosts))
        runs.append({"hosts": len(vms), "run": attempt, "repeat": repeat, "seconds": round(seconds),
                     "boot_seconds": round(boot_s), "changed": sum(h["changed"] for h in hosts.values()),
                     "wheel_builds": wheel_builds(output), **usage})
        log("%d host(s), %s: %.0f s" % (len(vms), attempt, seconds))
    return runs


def reconverge_ratios(runs):
    """{host count: spread of re-converge seconds / first converge seconds over the repeats}."""
    ratios = {}
    for run_ in runs:
        if run_["run"] == "re-converge":
            first = next(r for r in runs if r["hosts"] == run_["hosts"] and r["repeat"] == run_["repeat"]
                         and r["run"] == "first converge")
            ratios.setdefault(str(run_["hosts"]), []).append(run_["seconds"] / first["seconds"])
    return {hosts: stats.spread(values) for hosts, values in ratios.items()}


def carried_runs(measured_counts):
    """The committed report's runs for host counts this run skipped (--hosts), marked with what measured them."""
    previous, origin = committed_report("converge")
    if previous is None:
        return []
    return [dict(run_, measured_by=run_.get("measured_by") or origin)
            for run_ in previous["runs"] if run_["hosts"] not in measured_counts]


def markdown(data):
    env = data["environment"]
    lines = ["# Converge cost", "", data["note"], "",
             run_line(env) + " playbooks/site.yml on fresh lab VMs (1 vCPU, 1.5 GiB each), "
             "wheel cache: %s; ansible-playbook with %s. Controller CPU: user + system seconds of "
             "ansible-playbook and all it ran on the controller." % (
                 data["wheel_cache"],
                 ", ".join("%s=%s" % item for item in sorted(data.get("playbook_env", {}).items())) or "Ansible's defaults"),
             "",
             "| hosts | repeat | run | wall s | x first converge | controller CPU s | tasks changed | wheel builds | measured |",
             "|---|---|---|---|---|---|---|---|---|"]
    runs = sorted(data["runs"], key=lambda run_: (run_["hosts"], run_.get("repeat", 0)))
    firsts = {(r["hosts"], r.get("repeat", 0)): r["seconds"] for r in runs if r["run"] == "first converge"}
    for r in runs:
        by = r.get("measured_by")
        when = "carried: `%s` (%s, commit %s)" % (by["command"], by["date"], by["commit"]) if by else "this run"
        key = (r["hosts"], r.get("repeat", 0))
        ratio = "%.2f" % (r["seconds"] / firsts[key]) if key in firsts else "-"
        cpu = "%.1f" % r["controller_cpu_seconds"] if "controller_cpu_seconds" in r else "-"
        lines.append("| %d | %d | %s | %d | %s | %s | %d | %d | %s |" % (
            r["hosts"], r.get("repeat", 0) + 1, r["run"], r["seconds"], ratio, cpu, r["changed"], r["wheel_builds"], when))
    if data.get("reconverge_over_first"):
        lines += ["", "Re-converge / first converge over the repeats of this run: median [min - max]:", ""]
        lines += ["- %s host(s): %.2f [%.2f - %.2f]" % (hosts, s["median"], s["min"], s["max"])
                  for hosts, s in sorted(data["reconverge_over_first"].items())]
    if data.get("conditions"):
        lines += ["", "Machine before the run: %s; VMs %s." % (
            "; ".join(data["conditions"]["machine_check"]) or "quiet (no other qemu, low load)",
            "pinned (scripts/lab up --pin: each VM's vCPU 0 on its own host CPU in turn)"
            if data["conditions"]["pinned"] else "not pinned")]
    lines.append("")
    return "\n".join(lines)
