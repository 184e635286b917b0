"""Wait until a llama_server instance is ready; give up early on a crash loop.

Usage: cpuinfer-wait-ready UNIT PORT TIMEOUT_SECONDS [health|completion]   (API key in LLAMA_SERVER_API_KEY)
       cpuinfer-wait-ready UNIT unit TIMEOUT_SECONDS   (port and probe from the unit's command line: a
       rollback restarts units whose instances the play no longer lists)
health: GET /health answers 200 (llama-server: 503 while the model loads). completion (the default,
for the Python server, which has no health endpoint): a 1-token completion answers.
Exit 0 when ready; 1 with the reason and the unit's last log lines when the unit restarts again and
again, has failed, or the timeout passes. Standard library only: it runs with the host's python3.
"""

import json
import os
import subprocess
import sys
import time
import urllib.error
import urllib.request

# A model that cannot load makes systemd restart the unit every few seconds; three restarts while we
# wait is a crash loop, not a slow start.
MAX_RESTARTS_WHILE_WAITING = 3
POLL_SECONDS = 3


def unit_state(unit, properties=("NRestarts", "ActiveState", "SubState")):
    out = subprocess.run(["systemctl", "show", "--property=" + ",".join(properties), unit],
                         capture_output=True, text=True, check=True).stdout
    return dict(line.split("=", 1) for line in out.splitlines() if "=" in line)


def healthy(port, api_key):
    request = urllib.request.Request("http://127.0.0.1:%d/health" % port)
    try:
        with urllib.request.urlopen(request, timeout=10) as response:
            return response.status == 200
    except (urllib.error.URLError, OSError):  # HTTPError (503 while loading) is a URLError
        return False


def answers(port, api_key):
    headers = {"Content-Type": "application/json"}
    if api_key:
        headers["Authorization"] = "Bearer " + api_key
    body = json.dumps({"prompt": "ready?", "max_tokens": 1}).encode()
    request = urllib.request.Request("http://127.0.0.1:%d/v1/completions" % port, data=body, headers=headers)
    try:
        with urllib.request.urlopen(request, timeout=60) as response:
            return response.status == 200
    except (urllib.error.URLError, OSError):
        return False


def journal_tail(unit):
    return subprocess.run(["journalctl", "--unit", unit, "--lines", "15", "--no-pager", "--output", "cat"],
                          capture_output=True, text=True, check=False).stdout


def wait(unit, port, timeout, probe="completion", api_key=""):
    """None once the instance answers; else why it never will (failed unit, crash loop, timeout)."""
    ready = healthy if probe == "health" else answers
    deadline = time.monotonic() + timeout
    first_restarts = int(unit_state(unit).get("NRestarts", "0"))
    while True:
        if ready(port, api_key):
            return None
        state = unit_state(unit)
        restarts = int(state.get("NRestarts", "0")) - first_restarts
        if state.get("ActiveState") == "failed":
            return "%s has failed" % unit
        if restarts >= MAX_RESTARTS_WHILE_WAITING:
            return "%s restarted %d times while starting (crash loop)" % (unit, restarts)
        if time.monotonic() > deadline:
            return "%s did not answer on 127.0.0.1:%d within %.0f s" % (unit, port, timeout)
        time.sleep(POLL_SECONDS)


def port_and_probe_of(exec_start):
    """(port, probe) from a unit's ExecStart as systemctl show prints it: --port N of either engine;
    llama-server answers /health, the Python server only completions."""
    words = exec_start.replace(";", " ").split()
    port = next((words[i + 1] for i, word in enumerate(words[:-1]) if word == "--port"), None)
    if port is None or not port.isdigit():
        raise ValueError("no --port in the unit's command line: %s" % exec_start)
    probe = "health" if any(word.endswith("/llama-server") for word in words) else "completion"
    return int(port), probe


def main(argv=None):
    argv = sys.argv if argv is None else argv
    unit, timeout = argv[1], float(argv[3])
    if argv[2] == "unit":
        try:
            port, probe = port_and_probe_of(unit_state(unit, ("ExecStart",)).get("ExecStart", ""))
        except ValueError as exc:
            sys.stderr.write("%s: %s\n" % (unit, exc))
            return 1
    else:
        port, probe = int(argv[2]), argv[4] if len(argv) > 4 else "completion"
    reason = wait(unit, port, timeout, probe, os.environ.get("LLAMA_SERVER_API_KEY", ""))
    if reason:
        sys.stderr.write("%s\n--- last log lines ---\n%s" % (reason, journal_tail(unit)))
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
