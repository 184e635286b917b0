"""Wait until a llama_server instance is ready; give up early on a crash loop.

Usage: cpuinfer-wait-ready UNIT PORT TIMEOUT_SECONDS [health|completion]   (API key in LLAMA_SERVER_API_KEY)
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


def main(argv=None):
    argv = sys.argv if argv is None else argv
    unit, port, timeout = argv[1], int(argv[2]), float(argv[3])
    reason = wait(unit, port, timeout, argv[4] if len(argv) > 4 else "completion", os.environ.get("LLAMA_SERVER_API_KEY", ""))
    if reason:
        sys.stderr.write("%s\n--- last log lines ---\n%s" % (reason, journal_tail(unit)))
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
