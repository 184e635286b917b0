"""Hold a llama-server instance's stop until the requests it serves have finished.

Usage: cpuinfer-stop-when-idle PORT TIMEOUT_SECONDS MAINPID   (the unit's ExecStop)

llama-server does not drain: SIGTERM ends its loop after the current batch and closes every stream
cleanly, so a client reading a stream gets a shorter answer and no error. This waits, polling the
engine's own /metrics (llamacpp:requests_processing and llamacpp:requests_deferred, the API key from
the unit's credential), until both are 0 on two polls in a row; systemd's SIGTERM then stops a server
that holds no request. When TIMEOUT_SECONDS pass with requests still running it kills the server
(SIGKILL): those clients' streams break with an error instead of ending early as if complete. A server
that no longer answers is taken as idle. Without a front door new requests still arrive while it
waits; one that arrives in the last poll interval before the SIGTERM is the window left.
"""

import os
import signal
import sys
import time
import urllib.error
import urllib.request

POLL_SECONDS = 0.5
BUSY_METRICS = ("llamacpp:requests_processing", "llamacpp:requests_deferred")


def api_key():
    directory = os.environ.get("CREDENTIALS_DIRECTORY")
    if not directory:
        return ""
    try:
        with open(os.path.join(directory, "api-key"), encoding="utf-8") as handle:
            return handle.read().strip()
    except OSError:
        return ""


def requests_held(port, key, timeout=5):
    """Requests the engine processes or defers now; None when it does not answer."""
    headers = {"Authorization": "Bearer " + key} if key else {}
    request = urllib.request.Request("http://127.0.0.1:%d/metrics" % port, headers=headers)
    try:
        with urllib.request.urlopen(request, timeout=timeout) as response:
            text = response.read().decode("utf-8", "replace")
    except (urllib.error.URLError, OSError, ValueError):
        return None
    # imported only for a server that answered: after a crash (systemd runs ExecStop then too) the stop
    # returns at once, and the parser's import costs a second or more under software emulation
    from prometheus_client.parser import text_string_to_metric_families
    held = 0.0
    for family in text_string_to_metric_families(text):
        for sample in family.samples:
            if sample.name in BUSY_METRICS:
                held += sample.value
    return int(held)


def wait_idle(port, timeout, key="", poll=POLL_SECONDS, clock=time.monotonic, sleep=time.sleep):
    """'idle' once two polls in a row find nothing held, 'gone' when the engine does not answer,
    'timeout' when requests still run at the deadline."""
    deadline = clock() + timeout
    idle_polls = 0
    while True:
        held = requests_held(port, key)
        if held is None:
            return "gone"
        idle_polls = idle_polls + 1 if held == 0 else 0
        if idle_polls >= 2:
            return "idle"
        if clock() >= deadline:
            return "timeout"
        sleep(poll)


def main(argv=None, kill=os.kill):
    args = sys.argv[1:] if argv is None else argv
    if len(args) != 3:
        sys.stderr.write("usage: cpuinfer-stop-when-idle PORT TIMEOUT_SECONDS MAINPID\n")
        return 2
    port, timeout, pid = int(args[0]), float(args[1]), int(args[2] or 0)
    outcome = wait_idle(port, timeout, api_key())
    if outcome == "timeout" and pid > 0:
        sys.stderr.write("requests still running after %gs: killing the server so their streams fail "
                         "instead of ending early\n" % timeout)
        kill(pid, signal.SIGKILL)
    elif outcome == "idle":
        sys.stderr.write("no request in flight: stopping\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
