"""cpuinfer-pull-run: one ansible-pull run of the pull mode, its result kept and exported.

Usage: cpuinfer-pull-run --textfile PATH --state PATH --checkout DIR --ref REF --interval SECONDS
                         [--full-every SECONDS] -- ANSIBLE-PULL-COMMAND...

The pull role's cpuinfer-pull.service runs it on a timer. It runs the command given after `--`, its
output passed through to the journal line by line, and adds `--only-if-changed` when the last playbook
run succeeded and is younger than --full-every: a converge that failed is retried on the next run even
when the repository has not moved, and a periodic full run puts back what drifted. It reads the play's
recap from that output and the commit the checkout holds, keeps them in STATE (JSON), and writes
node_exporter's textfile (replaced whole): the run's time, duration and result, the last playbook run's
task counts, and the commit the host last converged successfully, which the promotion of a canary ref
waits for. Exits with the command's status, so the unit fails as the run did.
"""

import argparse
import json
import os
import re
import subprocess
import sys
import time

from cpuinfer_agent.unit_metrics import Family, write_textfile
from ansible_collections.cpuinfer.llm.plugins.module_utils._persist import create_parents, read_file, replace_file

PREFIX = "cpuinfer_pull_"
RESULTS = ("ok", "changed", "unreachable", "failed", "skipped", "rescued", "ignored")
RECAP = re.compile(r"^\S+\s*:\s*" + r"\s+".join(r"%s=([0-9]+)" % name for name in RESULTS))
UNCHANGED = "Repository has not changed, quitting"
ONLY_IF_CHANGED = "--only-if-changed"


def parse_args(argv):
    parser = argparse.ArgumentParser(prog="cpuinfer-pull-run", description=__doc__.split("\n\n", maxsplit=1)[0])
    parser.add_argument("--textfile", required=True, help="node_exporter textfile to replace")
    parser.add_argument("--state", required=True, help="JSON file of the last run and the last playbook run")
    parser.add_argument("--checkout", required=True, help="ansible-pull's checkout directory (-d)")
    parser.add_argument("--ref", required=True, help="the branch this host follows (-C), for the metrics' labels")
    parser.add_argument("--interval", type=float, required=True, help="seconds between runs (the timer's)")
    parser.add_argument("--full-every", type=float, default=86400.0,
                        help="seconds after which a run converges even when the repository has not moved")
    parser.add_argument("command", nargs="+", help="ansible-pull and its arguments, after --")
    return parser.parse_args(argv)


def read_state(path):
    """The kept state, {} when there is none or it cannot be read (a run never fails on its own record)."""
    try:
        state = json.loads(read_file("/", path) or "{}")
    except ValueError:
        return {}
    return state if isinstance(state, dict) else {}


def command_for(command, state, now, full_every):
    """The command as run: --only-if-changed only after a playbook run that succeeded, not too long ago."""
    last = state.get("playbook") or {}
    if ONLY_IF_CHANGED in command:
        return list(command)
    if last.get("succeeded") and now - float(last.get("time", 0)) < full_every:
        return list(command) + [ONLY_IF_CHANGED]
    return list(command)


def run_passing_through(command, out=sys.stdout):
    """(exit status, [output lines]): the command's stdout and stderr, each line written on as it comes."""
    process = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, errors="replace")
    lines = []
    for line in process.stdout:
        out.write(line)
        out.flush()
        lines.append(line.rstrip("\n"))
    return process.wait(), lines


def outcome(lines):
    """What the output says: {'ran': the playbook ran, 'tasks': {result: count} summed over the recap's hosts}."""
    tasks, recap = dict((name, 0) for name in RESULTS), False
    for line in lines:
        match = RECAP.match(line.strip())
        if match:
            recap = True
            for name, count in zip(RESULTS, match.groups()):
                tasks[name] += int(count)
    unchanged = any(UNCHANGED in line for line in lines)
    return {"ran": recap or not unchanged, "tasks": tasks if recap else None}


def checkout_commit(checkout):
    """The commit the checkout holds, or None (no checkout yet, no git)."""
    try:
        result = subprocess.run(["git", "-C", checkout, "rev-parse", "HEAD"], capture_output=True, text=True, check=False)
    except OSError:
        return None
    commit = result.stdout.strip()
    return commit if result.returncode == 0 and re.fullmatch(r"[0-9a-f]{40,64}", commit) else None


def next_state(state, status, seen, commit, ref, started, finished):
    """The state after this run: the run itself always; the playbook run when one ran (a checkout that failed
    counts as a failed playbook run: the host converged nothing); the converged commit when a playbook run
    succeeded. A run skipped as unchanged keeps the last converged commit: it is only skipped after a success."""
    new = dict(state)
    new["run"] = {"time": finished, "duration": finished - started, "succeeded": status == 0, "status": status,
                  "commit": commit, "ref": ref}
    if seen["ran"] or status != 0:
        new["playbook"] = {"time": finished, "succeeded": status == 0, "commit": commit, "ref": ref,
                           "tasks": seen["tasks"] or dict((name, 0) for name in RESULTS)}
    if status == 0:
        new["last_success"] = finished
        if seen["ran"] and commit:
            new["converged"] = {"commit": commit, "ref": ref, "time": finished}
    return new


def families(state, interval):
    """The textfile's metric families from the state."""
    run, playbook = state.get("run") or {}, state.get("playbook") or {}

    def gauge(name, help_text, value, labels=None):
        family = Family(PREFIX + name, "gauge", help_text)
        if value is not None:
            family.add(labels or {}, value)
        return family

    tasks = Family(PREFIX + "playbook_tasks", "gauge", "Tasks of the last playbook run by result (the play's recap)")
    for name, count in sorted((playbook.get("tasks") or {}).items()):
        tasks.add({"result": name}, count)
    converged = state.get("converged") or {}
    return [
        gauge("interval_seconds", "Seconds between pull runs (the timer's)", interval),
        gauge("run_timestamp_seconds", "When the last pull run ended", run.get("time")),
        gauge("run_duration_seconds", "How long the last pull run took", run.get("duration")),
        gauge("run_success", "1 when the last pull run exited 0", None if not run else int(bool(run.get("succeeded")))),
        gauge("last_success_timestamp_seconds", "When a pull run last exited 0", state.get("last_success")),
        gauge("playbook_timestamp_seconds", "When the playbook last ran (not skipped as unchanged)", playbook.get("time")),
        gauge("playbook_success", "1 when the last playbook run succeeded",
              None if not playbook else int(bool(playbook.get("succeeded")))),
        tasks,
        gauge("checkout_info", "The commit the checkout holds and the ref it follows", 1 if run.get("commit") else None,
              {"commit": run.get("commit") or "", "ref": run.get("ref") or ""}),
        gauge("converged_info", "The commit this host last converged successfully", 1 if converged.get("commit") else None,
              {"commit": converged.get("commit") or "", "ref": converged.get("ref") or ""}),
    ]


def save_state(path, state):
    create_parents("/", path)
    replace_file("/", path, json.dumps(state, sort_keys=True, indent=1) + "\n", mode=0o644)


def main(argv=None):
    args = parse_args(sys.argv[1:] if argv is None else argv)
    state = read_state(args.state)
    started = time.time()
    command = command_for(args.command, state, started, args.full_every)
    sys.stdout.write("cpuinfer-pull-run: %s\n" % " ".join(command))
    try:
        status, lines = run_passing_through(command)
    except OSError as exc:
        sys.stdout.write("cpuinfer-pull-run: cannot run %s: %s\n" % (command[0], exc))
        status, lines = 127, []
    state = next_state(state, status, outcome(lines), checkout_commit(args.checkout), args.ref, started, time.time())
    save_state(args.state, state)
    os.makedirs(os.path.dirname(args.textfile) or ".", exist_ok=True)
    write_textfile(args.textfile, families(state, args.interval))
    sys.stdout.write("cpuinfer-pull-run: exit %d, converged %s\n" % (status, (state.get("converged") or {}).get("commit")))
    return status


if __name__ == "__main__":
    sys.exit(main())
