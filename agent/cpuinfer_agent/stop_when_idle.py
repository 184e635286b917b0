"""Hold a llama-server instance's stop until the requests it serves have finished.

Usage: cpuinfer-stop-when-idle PORT TIMEOUT_SECONDS MAINPID [API_KEY_FILE]   (the unit's ExecStop)

llama-server does not drain: SIGTERM ends its loop after the current batch and closes every stream
cleanly, so a client reading a stream gets a shorter answer and no error. This waits, polling the
engine's own /metrics (llamacpp:requests_processing and llamacpp:requests_deferred), until both are 0
on two polls in a row; systemd's SIGTERM then stops a server
that holds no request. When TIMEOUT_SECONDS pass with requests still running it kills the server
(SIGKILL): those clients' streams break with an error instead of ending early as if complete. A server
that no longer answers is taken as idle. Without a front door new requests still arrive while it
waits; one that arrives in the last poll interval before the SIGTERM is the window left.

The key is read from the file the unit loads as its credential, so the unit runs this as root
(`ExecStop=+`): systemd 252 (Debian 12) gives an ExecStop of a DynamicUser service no access to the
unit's $CREDENTIALS_DIRECTORY (permission denied as the service's user; not mounted for `+`). An engine
that answers but refuses the key is reported and not waited for: nothing can tell whether it is idle.
"""

import os
import signal
import sys
import time
import urllib.error

from cpuinfer_agent import stream_probe

POLL_SECONDS = 0.5
BUSY_METRICS = ("llamacpp:requests_processing", "llamacpp:requests_deferred")


class Refused(Exception):
    """The engine answered /metrics with an HTTP error (a wrong key, metrics off)."""


def read_key(path):
    with open(path, encoding="utf-8") as handle:
        return handle.read().strip()


def requests_held(port, key, timeout=5):
    """Requests the engine processes or defers now; None when it does not answer."""
    try:
        held = stream_probe.engine_samples(port, key, BUSY_METRICS, timeout)
    except urllib.error.HTTPError as error:
        raise Refused("HTTP %d" % error.code) from error
    except (urllib.error.URLError, OSError, ValueError):
        return None
    return int(sum(held.values()))


def wait_idle(port, timeout, key="", poll=POLL_SECONDS, clock=time.monotonic, sleep=time.sleep):
    """'idle' once two polls in a row find nothing held, 'gone' when the engine does not answer,
    'timeout' when requests still run at the deadline; Refused when it answers with an HTTP error."""
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
    if len(args) not in (3, 4):
        sys.stderr.write("usage: cpuinfer-stop-when-idle PORT TIMEOUT_SECONDS MAINPID [API_KEY_FILE]\n")
        return 2
    port, timeout, pid = int(args[0]), float(args[1]), int(args[2] or 0)
    try:
        outcome = wait_idle(port, timeout, read_key(args[3]) if len(args) == 4 else "")
    except (OSError, Refused) as error:
        # the stop goes on (systemd's SIGTERM follows): said loudly, since streams may end early
        sys.stderr.write("cannot tell whether the engine is idle (%s): stopping without waiting\n" % error)
        return 1
    if outcome == "timeout" and pid > 0:
        sys.stderr.write("requests still running after %gs: killing the server so their streams fail "
                         "instead of ending early\n" % timeout)
        kill(pid, signal.SIGKILL)
    elif outcome == "idle":
        sys.stderr.write("no request in flight: stopping\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
