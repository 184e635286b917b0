"""The main job's rollout row: a rolling restart of every lab instance through playbooks/canary.yml while an
open-loop load of streamed completions runs through the front door (benchmarks/rollout/load.py, its rate
half of what the slowest instance serves, measured first). Prints the playbook's task names as progress
and one row:
  rollout under load: sent N, completed N, failed 0, truncated 0, p99 TTFT steady X s -> rollout Y s
Exits 1 when the rollout failed or a request failed or ended short; the load's JSON goes to LOG.json.

Usage: python scripts/lab_rollout.py INVENTORY_JSON LOG [ansible-playbook arguments...]
"""

import json
import re
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
FRONTDOOR_PORT = "9081"
STEADY_SECONDS = 20
AFTER_SECONDS = 10
# HAProxy's log: after the termination state, actconn/feconn/beconn/srv_conn/retries ('+' when redispatched)
RETRIED = re.compile(r" [-A-Za-z]{4} [0-9]+/[0-9]+/[0-9]+/[0-9]+/\+?[1-9][0-9]* ")


def frontdoor(inventory):
    """(host, URL, every lab host) of the lab's front door."""
    lab = inventory["all"]["children"]["lab"]
    name = sorted(lab["children"]["frontdoor"]["hosts"])[0]
    return name, "http://127.0.0.1:%d/v1" % lab["hosts"][name]["lab_forwarded_ports"][FRONTDOOR_PORT], sorted(lab["hosts"])


def journal(host, minutes, *selector):
    log = subprocess.run([str(REPO / "scripts/lab"), "ssh", host, "sudo", "journalctl", *selector, "--no-pager",
                          "-o", "short-precise", "--since", "-%dmin" % minutes], capture_output=True, text=True, check=False)
    return log.stdout.splitlines()


def unfinished_requests(frontdoor_log):
    """The lines of HAProxy's log whose session did not end normally (termination state other than ----: sQ a
    queue timeout, SC a refused connection, ...), that a server answered with a 5xx (which server said it) or
    that were retried on another server, and its health check changes."""
    return [line for line in frontdoor_log
            if " ---- " not in line or re.search(r" 5[0-9][0-9] [0-9]+ - - ", line) or RETRIED.search(line)]


def instance_journals(hosts, minutes):
    """[(host, line)] of every lab host's instance units in the last minutes."""
    return [(host, line) for host in hosts for line in journal(host, minutes, "-u", "cpuinfer-llama-*")]


def instance_lifecycle(instance_log):
    """What systemd and the engine said of the instances' starts and stops, per host."""
    # "oom" as a word: the engine's "making room for prompt cache entry", once a line per request, buried the rest
    wanted = re.compile(r"Started|Stopping|Stopped|Main process exited|Killed|\boom\b|out of memory|restart|model loaded|"
                        r"listening|error", re.IGNORECASE)
    return ["%s: %s" % (host, line) for host, line in instance_log if wanted.search(line)]


def keep_journals(log, frontdoor_log, instance_log):
    """The window's whole front door log and every instance's journal beside LOG: the VMs go down after a failed
    main job, and what a failed request met is read afterwards."""
    Path(log + ".haproxy").write_text("\n".join(frontdoor_log) + "\n", encoding="utf-8")
    Path(log + ".instances").write_text("\n".join("%s: %s" % entry for entry in instance_log) + "\n", encoding="utf-8")
    print("lab_rollout: the window's front door log and instance journals: %s.haproxy, %s.instances" % (log, log),
          file=sys.stderr)


def row(summary):
    def seconds(phase):
        value = summary.get("ttft_p99_s_" + phase)
        return "-" if value is None else "%.1f s" % value
    return ("rollout under load: sent %d, completed %d, failed %d, truncated %d, p99 TTFT steady %s -> rollout %s"
            % (summary["sent"], summary["completed"], summary["failed"], summary["truncated"], seconds("steady"),
               seconds("rollout")))


def canary(log, extra):
    """canary.yml with a rolling restart of every instance; task names to stdout, everything to log."""
    started = time.monotonic()
    command = ["ansible-playbook", "-i", str(REPO / "inventories/lab"), str(REPO / "playbooks/canary.yml"),
               "-e", "llama_server_restart_all=true"] + extra
    with open(log, "a", encoding="utf-8") as out, subprocess.Popen(
            command, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True) as playbook:
        for line in playbook.stdout:
            out.write(line)
            if line.startswith(("TASK [", "PLAY [")):
                print("   [%3.0fs] %s]" % (time.monotonic() - started, line.split("]")[0]), flush=True)
    return playbook.returncode


def main():
    inventory_path, log = sys.argv[1], sys.argv[2]
    host, url, hosts = frontdoor(json.loads(Path(inventory_path).read_text(encoding="utf-8")))
    started = time.monotonic()
    with tempfile.TemporaryDirectory() as scratch:
        phase, stop = Path(scratch) / "phase", Path(scratch) / "stop"
        load = subprocess.Popen([sys.executable, str(REPO / "benchmarks/rollout/load.py"), "--base-url", url,
                                 "--model", "tiny-llama", "--api-key", "lab-secret-not-for-production", "--tokens", "16",
                                 "--calibrate", "3", "--share", "0.5", "--stop-file", str(stop), "--phase-file", str(phase),
                                 "--max-seconds", "1800"], stdout=subprocess.PIPE, text=True)
        time.sleep(STEADY_SECONDS)
        phase.write_text("rollout\n", encoding="utf-8")
        rc = canary(log, sys.argv[3:])
        phase.write_text("after\n", encoding="utf-8")
        time.sleep(AFTER_SECONDS)
        stop.write_text("", encoding="utf-8")
        output = load.communicate()[0]
    if load.returncode != 0:
        print("lab_rollout: the load failed (exit %d) before its summary; canary.yml exit %d" % (load.returncode, rc),
              file=sys.stderr)
        return 1
    result = json.loads(output)
    Path(log + ".json").write_text(json.dumps(result), encoding="utf-8")
    summary = result["summary"]
    print("   load: %.1f s between requests (half of what the slowest instance serves), calibrated through the "
          "front door %s" % (summary["interval_s"], url))
    print(row(summary))
    # the front door's log of the window, read once: the retried count, and on a failure what the requests met
    minutes = (time.monotonic() - started) // 60 + 2
    frontdoor_log = journal(host, minutes, "-t", "haproxy")
    retried = [line for line in frontdoor_log if RETRIED.search(line)]
    print("   the front door retried %d of them on another server (refused before any answer: a 503 while a model "
          "loads, a closed connection)" % len(retried))
    if rc != 0:
        print("lab_rollout: playbooks/canary.yml failed (exit %d); its output: %s" % (rc, log), file=sys.stderr)
    bad = [r for r in result["requests"] if r["outcome"] != "completed"]
    for request in bad[:5]:
        print("lab_rollout: request %d %s: %s" % (request["index"], request["outcome"], request["error"]), file=sys.stderr)
    if bad:
        lines = unfinished_requests(frontdoor_log)
        instance_log = instance_journals(hosts, minutes)
        print("lab_rollout: the front door's log, sessions that did not end normally or got a 5xx, and check changes "
              "(%d lines, the last 40):\n%s" % (len(lines), "\n".join(lines[-40:])), file=sys.stderr)
        print("lab_rollout: the instances' starts and stops:\n%s" % "\n".join(instance_lifecycle(instance_log)[-40:]),
              file=sys.stderr)
        keep_journals(log, frontdoor_log, instance_log)
    return 1 if rc != 0 or bad else 0


if __name__ == "__main__":
    sys.exit(main())
