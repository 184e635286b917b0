"""First converge vs re-converge vs check mode, 1 host vs 3 hosts, the stock connection vs Mitogen; wheel builds
and controller CPU per run; the pull mode's run time on a host.

playbooks/site.yml on fresh lab VMs (benchmarks/converge/); pull mode: converge_pull."""

import argparse
import json
import re
import tempfile
import time
from pathlib import Path

import converge_pull
import machine
import stats
from common import (EMULATION_NOTE, MITOGEN_ENV, PLAYBOOK_ENV, REPO, committed_report, ensure_model, environment, lab,
                    log, playbook, run_line, write_report)

CONNECTIONS = {"stock": {}, "mitogen": MITOGEN_ENV}
# a run without a connection field was measured before the benchmark had the Mitogen variant: the stock path
STOCK = "stock"
# each fresh host: converge, converge again (nothing to change), then the check mode's dry run of that
ATTEMPTS = (("first converge", ()), ("re-converge", ()), ("check mode", ("--check", "--diff")))


def add_arguments(parser):
    parser.add_argument("--wheel-cache", help="a wheel cache directory (an empty one counts the builds of a cold run)")
    parser.add_argument("--keep", action="store_true", help="leave the last converged VMs running")
    parser.add_argument("--hosts", default="1,3", help="host counts to measure (1,3); the others are carried from the committed report")
    parser.add_argument("--connections", default="stock,mitogen",
                        help="stock (ssh, linear strategy) and/or mitogen (strategy mitogen_linear), comma-separated")
    parser.add_argument("--pull", action=argparse.BooleanOptionalAction, default=True,
                        help="also time the pull mode's own runs on a host (about 15 minutes; else carried)")
    parser.add_argument("--names", action=argparse.BooleanOptionalAction, default=True,
                        help="also re-converge the one-host VM under %d inventory names (on by default)" % NAMES)
    machine.add_options(parser, repeats=3)


# The one-host runs also re-converge their VM listed under this many inventory names (same address): a no-change
# converge writes nothing, so it costs the controller what as many hosts do, without as many emulated guests
# competing for the controller's two cores (docs/rollout.md, "Fewer tasks per host, counted per task").
NAMES = 3
NAMES_RUN = "re-converge, %d names of 1 VM" % NAMES

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
    connections = [c for c in args.connections.split(",") if c]
    unknown = sorted(set(connections) - set(CONNECTIONS))
    if unknown:
        raise SystemExit("bench: unknown connection(s) %s (known: %s)" % (unknown, sorted(CONNECTIONS)))
    runs = []
    for repeat in range(args.repeats):
        for count in counts:
            for connection in connections:
                runs += converge_hosts(vms[:count], inventory, topology_path, extra, args, repeat, connection)
                last = count == counts[-1] and connection == connections[-1] and repeat == args.repeats - 1
                if not (args.keep and last):
                    lab("down", *[vm["name"] for vm in vms[:count]])
    pull = measure_pull(extra, args) if args.pull else carried_pull()
    data = {"environment": environment(), "note": EMULATION_NOTE, "wheel_cache": args.wheel_cache or "the default",
            "playbook_env": PLAYBOOK_ENV, "repeats": args.repeats,
            "conditions": {"machine_check": problems, "pinned": args.pin},
            "reconverge_over_first": reconverge_ratios(runs), "runs": runs + carried_runs(counts, connections),
            "pull": pull}
    write_report("converge", data, markdown(data))


def converge_hosts(vms, inventory, topology_path, extra, args, repeat, connection):
    """Boot `vms` fresh (pinned unless --no-pin), run site.yml twice and in check mode on them through
    `connection`; the three runs' figures."""
    names = [vm["name"] for vm in vms]
    lab("down", *names)
    started = time.monotonic()
    lab("up", "--specs", json.dumps(vms), *(["--pin"] if args.pin else []))
    boot_s = time.monotonic() - started
    lab("inventory", "--topology", topology_path, "--output", inventory / "hosts.yml")
    runs = []
    attempts = [(attempt, options, inventory, names) for attempt, options in ATTEMPTS]
    with tempfile.TemporaryDirectory(prefix="cpuinfer-names.") as scratch:
        if len(vms) == 1 and connection == STOCK and args.names:
            aliases = Path(scratch)
            attempts.append((NAMES_RUN, (), aliases, names_of_one(inventory, aliases, NAMES)))
        for attempt, options, hosts_inventory, expected in attempts:
            usage = {}
            seconds, output = playbook(hosts_inventory, "playbooks/site.yml", *extra, *options, usage=usage,
                                       env=CONNECTIONS[connection], per_task=True)
            # the target check's play runs on localhost: only the lab hosts are counted
            hosts = {name: counts for name, counts in recap(output).items() if name != "localhost"}
            if sorted(hosts) != sorted(expected) or any(h["failed"] or h["unreachable"] for h in hosts.values()):
                raise SystemExit("bench: %s on %s did not succeed: %s" % (attempt, expected, hosts))
            runs.append({"hosts": len(vms), "connection": connection, "run": attempt, "repeat": repeat,
                         "seconds": round(seconds),
                         "boot_seconds": round(boot_s), "changed": sum(h["changed"] for h in hosts.values()),
                         "wheel_builds": wheel_builds(output), **usage,
                         **({"names": len(expected)} if attempt == NAMES_RUN else {})})
            log("%d host(s), %s, %s: %.0f s" % (len(vms), connection, attempt, seconds))
    return runs


def names_of_one(inventory, directory, count):
    """An inventory in `directory` of the one VM of `inventory`'s hosts.yml under `count` names (NAMES): the same
    address, port and groups (but the canary's); returns the names."""
    hosts_file = json.loads((inventory / "hosts.yml").read_text(encoding="utf-8"))
    lab_hosts = hosts_file["all"]["children"]["lab"]
    ((name, host),) = lab_hosts["hosts"].items()
    names = [name] + ["%s-as-%d" % (name, n) for n in range(2, count + 1)]
    for alias in names[1:]:
        lab_hosts["hosts"][alias] = dict(host, lab_reached_at={alias: host["lab_reached_at"][name]})
        for group, members in lab_hosts["children"].items():
            if group != "canary" and name in members.get("hosts", {}):
                members["hosts"][alias] = {}
    (directory / "hosts.yml").write_text(json.dumps(hosts_file, indent=1), encoding="utf-8")
    (directory / "group_vars").symlink_to((inventory / "group_vars").resolve())
    return names


def measure_pull(extra, args):
    topology_path = REPO / "benchmarks" / "converge" / "pull_topology.json"
    vm = json.loads(topology_path.read_text(encoding="utf-8"))["vms"][0]
    # not the converge runs' inventory: its group variables (the lab's bind address and clients) are not in the
    # inventory the host pulls, so its first pull would change what the controller's converge set
    inventory = REPO / "benchmarks" / "converge" / "pull_inventory"
    inventory.mkdir(exist_ok=True)
    with tempfile.TemporaryDirectory(prefix="cpuinfer-pull-bench.") as workdir:
        try:
            runs, enabling = converge_pull.measure(vm, inventory, topology_path, extra, args.pin, Path(workdir))
        finally:
            if not args.keep:
                lab("down", vm["name"])
    return {"host": vm["name"], "enable": enabling, "runs": runs}


def carried_pull():
    """The committed report's pull runs (--no-pull), marked with what measured them; None when it has none."""
    previous, origin = committed_report("converge")
    if not previous or not previous.get("pull"):
        return None
    return dict(previous["pull"], measured_by=previous["pull"].get("measured_by") or origin)


def pull_markdown(pull):
    if not pull:
        return []
    by = pull.get("measured_by")
    when = "carried: `%s` (%s, commit %s)" % (by["command"], by["date"], by["commit"]) if by else "this run"
    lines = ["", "Pull mode on one host (%s; %s): `playbooks/pull_enable.yml` from the controller took %d s (controller "
             "CPU %.1f s: the converge, then ansible-core's venv installed offline and the timer); then the host's own "
             "timer (every 60 s) ran ansible-pull from a repository this machine served it - no controller in the loop. "
             "Each run as the host recorded it (cpuinfer-pull-run's state):" % (
                 pull["host"], when, pull["enable"]["seconds"], pull["enable"].get("controller_cpu_seconds", 0)),
             "", "| pull run | seconds on the host | playbook ran | ok / changed / skipped |", "|---|---|---|---|"]
    for r in pull["runs"]:
        tasks = r.get("tasks") or {}
        counts = "%d / %d / %d" % (tasks.get("ok", 0), tasks.get("changed", 0), tasks.get("skipped", 0)) if tasks else "-"
        lines.append("| %s | %.0f | %s | %s |" % (r["run"], r["seconds"], "yes" if r["playbook_ran"] else "no", counts))
    return lines


def connection_of(run_):
    return run_.get("connection", STOCK)


def partner_of(runs, run_, hosts, name):
    """The run called `name` on `hosts` hosts of the same connection and repeat as run_ (None when not among runs)."""
    return next((r for r in runs if r["run"] == name and r["hosts"] == hosts and connection_of(r) == connection_of(run_)
                 and r.get("repeat", 0) == run_.get("repeat", 0)), None)


def first_converge_of(runs, run_):
    return partner_of(runs, run_, run_["hosts"], "first converge")


def reconverge_ratios(runs):
    """{"<connection> <host count>": spread of re-converge seconds / first converge seconds over the repeats}."""
    ratios = {}
    for run_ in runs:
        first = first_converge_of(runs, run_) if run_["run"] == "re-converge" else None
        if first:
            ratios.setdefault("%s %d" % (connection_of(run_), run_["hosts"]), []).append(run_["seconds"] / first["seconds"])
    return {key: stats.spread(values) for key, values in ratios.items()}


def cpu_parts(run_):
    """(all, main process, workers and what they ran) controller CPU seconds of a run; None for a part not measured
    (runs before the benchmark counted ansible-playbook's own process apart)."""
    total, main_process = run_.get("controller_cpu_seconds"), run_.get("main_process_cpu_seconds")
    return total, main_process, (total - main_process if main_process is not None else None)


def per_host_cpu(runs):
    """{(connection, run): [(all, main process, workers) controller CPU seconds each host adds]} from the 1- and
    3-host runs of one repeat: (3 hosts - 1 host) / 2, the play's fixed part cancelled out; and from the one VM's
    re-converge under NAMES names against its own re-converge."""
    found = {}
    measured = [r for r in runs if "controller_cpu_seconds" in r and not r.get("measured_by")]
    for three in (r for r in measured if r["hosts"] == 3 or r.get("names")):
        one = partner_of(measured, three, 1, "re-converge" if three.get("names") else three["run"])
        more = (three.get("names") or three["hosts"]) - 1
        if one:
            found.setdefault((connection_of(three), three["run"]), []).append(tuple(
                None if a is None or b is None else (a - b) / more for a, b in zip(cpu_parts(three), cpu_parts(one))))
    return found


def _seconds(value):
    return "-" if value is None else "%.1f" % value


def carried_runs(measured_counts, measured_connections=(STOCK,)):
    """The committed report's runs for the host counts and connections this run skipped (--hosts,
    --connections), marked with what measured them."""
    previous, origin = committed_report("converge")
    if previous is None:
        return []
    return [dict(run_, measured_by=run_.get("measured_by") or origin) for run_ in previous["runs"]
            if run_["hosts"] not in measured_counts or connection_of(run_) not in measured_connections]


def top_tasks_markdown(runs):
    """The tasks whose workers cost most in the last measured stock re-converge of the most hosts, the one VM under
    NAMES names first (its controller's cores are not shared with as many guests): where the per-host CPU above goes
    (benchmarks/callbacks/cpuinfer_task_cpu.py)."""
    measured = [r for r in runs if r.get("top_tasks") and r["run"] in ("re-converge", NAMES_RUN)
                and connection_of(r) == STOCK and not r.get("measured_by")]
    if not measured:
        return []
    run_ = max(measured, key=lambda r: (r.get("names", 0), r["hosts"], r.get("repeat", 0)))
    lines = ["", "The re-converge's tasks that cost the workers most (stock, %s, repeat %d; CPU seconds per host of "
             "the worker forked for the task and the ssh clients and commands it ran, module packing - once per module "
             "and run - included; %.2f s per host over %s tasks in all):" % (
                 "%d names of 1 VM" % run_["names"] if run_.get("names") else "%d host(s)" % run_["hosts"],
                 run_.get("repeat", 0) + 1, run_["workers_recorded_cpu_seconds_per_host"],
                 _seconds(run_["tasks_per_host"])), "",
             "| task | action | CPU s per host |", "|---|---|---|"]
    lines += ["| %s | `%s` | %.3f |" % (t["task"].replace("|", "/"), t["action"], t["cpu_seconds_per_host"])
              for t in run_["top_tasks"]]
    return lines


def markdown(data):
    env = data["environment"]
    lines = ["# Converge cost", "", data["note"], "",
             run_line(env) + " playbooks/site.yml on fresh lab VMs (1 vCPU, 1.5 GiB each), "
             "wheel cache: %s; ansible-playbook with %s; Mitogen's runs add %s. Check mode: `--check --diff` on the "
             "converged hosts. Controller CPU: user + system seconds of ansible-playbook and all it ran on the "
             "controller." % (
                 data["wheel_cache"],
                 ", ".join("%s=%s" % item for item in sorted(data.get("playbook_env", {}).items())) or "Ansible's defaults",
                 ", ".join("%s=%s" % (k, v if k != "ANSIBLE_STRATEGY_PLUGINS" else ".build/mitogen-strategy")
                           for k, v in sorted(MITOGEN_ENV.items()))),
             "",
             "| hosts | connection | repeat | run | wall s | x first converge | controller CPU s | of it ansible-playbook's "
             "own process | tasks per host | tasks changed | wheel builds | measured |",
             "|---|---|---|---|---|---|---|---|---|---|---|---|"]
    order = {attempt[0]: index for index, attempt in enumerate(ATTEMPTS)}
    runs = sorted(data["runs"], key=lambda r: (r["hosts"], connection_of(r) != STOCK, r.get("repeat", 0),
                                               order.get(r["run"], len(order))))
    for r in runs:
        by = r.get("measured_by")
        when = "carried: `%s` (%s, commit %s)" % (by["command"], by["date"], by["commit"]) if by else "this run"
        first = first_converge_of(runs, r)
        ratio = "%.2f" % (r["seconds"] / first["seconds"]) if first else "-"
        total, main_process, dummy = cpu_parts(r)
        hosts = "%d (%d names)" % (r["hosts"], r["names"]) if r.get("names") else r["hosts"]
        lines.append("| %s | %s | %d | %s | %d | %s | %s | %s | %s | %d | %d | %s |" % (
            hosts, connection_of(r), r.get("repeat", 0) + 1, r["run"], r["seconds"], ratio, _seconds(total),
            _seconds(main_process), _seconds(r.get("tasks_per_host")), r["changed"], r["wheel_builds"], when))
    shares = per_host_cpu(runs)
    if shares:
        lines += ["", "Controller CPU each host adds, (3 hosts - 1 host) / 2 of the same repeat (the play's fixed part "
                  "cancelled out; for the one VM under more names, (those names - its own re-converge) / (names - 1)), "
                  "this run's hosts only; apart, ansible-playbook's own process (the loop that waits on "
                  "workers grows with the play's wall time, which three emulated VMs on two cores stretch) and the "
                  "workers with the ssh clients and commands they ran (a fork per host and task):", "",
                  "| connection | run | CPU s per host | of it ansible-playbook's own process | of it workers |",
                  "|---|---|---|---|---|"]
        for (connection, run_), values in sorted(shares.items(), key=lambda item: (
                item[0][0] != STOCK, order.get(item[0][1], len(order)))):
            parts = [", ".join(_seconds(v[part]) for v in values) for part in range(3)]
            lines.append("| %s | %s | %s | %s | %s |" % tuple([connection, run_] + parts))
    lines += top_tasks_markdown(runs)
    if data.get("reconverge_over_first"):
        lines += ["", "Re-converge / first converge over the repeats of this run: median [min - max]:", ""]
        lines += ["- %s host(s): %.2f [%.2f - %.2f]" % (key, s["median"], s["min"], s["max"])
                  for key, s in sorted(data["reconverge_over_first"].items())]
    lines += pull_markdown(data.get("pull"))
    if data.get("conditions"):
        lines += ["", "Machine before the run: %s; VMs %s." % (
            "; ".join(data["conditions"]["machine_check"]) or "quiet (no other qemu, low load)",
            "pinned (scripts/lab up --pin: each VM's vCPU 0 on its own host CPU in turn)"
            if data["conditions"]["pinned"] else "not pinned")]
    lines.append("")
    return "\n".join(lines)
