"""Measure one streamed completion against a local llama.cpp server: tokens/s and inter-token
latency percentiles. Standard library only, so it runs with the host's own python3.

Usage: cpuinfer-stream-probe PORT MAX_TOKENS [API_KEY]
Prints JSON {"tokens", "first_token_ms", "total_ms", "tokens_per_second", "decode_tokens_per_second",
"p50_ms", "p99_ms", "gaps_ms"}.

Usage: cpuinfer-stream-probe --active MAX_TOKENS WAIT_S
Measures every instance that runs on this host now (each active cpuinfer-llama-NAME.service, its
port read from its command line, its API key from /etc/cpuinfer/llama-server/NAME.key where that
exists, else $LLAMA_SERVER_API_KEY); an instance that does not answer yet is retried for WAIT_S
seconds. Prints JSON {NAME: measurement}, {} when none runs: the gate's "as it is" and "after".
Each instance first gets a short completion that is not measured (see warm_then_measure).

tokens_per_second is end to end (tokens over the whole request, first token included). The rate between
the first and the last event is reported too, but not gated on: server-sent events may arrive in
bursts, and a burst makes that span short and the rate meaningless.
"""

import json
import os
import subprocess
import sys
import time
import urllib.error
import urllib.request

UNIT_PREFIX = "cpuinfer-llama-"
WARM_UP_TOKENS = 4
KEY_DIR = "/etc/cpuinfer/llama-server"


def percentile(values, fraction):
    """Nearest-rank percentile, the project's one (the agent, the benchmarks and their load clients use it);
    None for no values: no reading is not a latency of 0."""
    ordered = sorted(values)
    if not ordered:
        return None
    return ordered[min(len(ordered) - 1, max(0, int(round(fraction * (len(ordered) - 1)))))]


def _gap_percentile(gaps, fraction):
    """A probe of one token has no gap between tokens: 0.0, and the gate's tokens/s floor judges it."""
    value = percentile(gaps, fraction)
    return 0.0 if value is None else round(value, 1)


def token_arrivals(port, body, api_key="", timeout=600):
    """POST a streamed completion to 127.0.0.1:PORT; (started, [arrival of each event carrying text],
    finished), monotonic seconds. Events without text (llama-server's closing chunk with the finish
    reason) are no tokens."""
    headers = {"Content-Type": "application/json"}
    if api_key:
        headers["Authorization"] = "Bearer " + api_key
    request = urllib.request.Request("http://127.0.0.1:%d/v1/completions" % port, data=json.dumps(body).encode(),
                                     headers=headers)
    started = time.monotonic()
    arrivals = []
    with urllib.request.urlopen(request, timeout=timeout) as response:
        for raw in response:
            line = raw.decode().strip()
            if line.startswith("data:") and line != "data: [DONE]":
                if any(choice.get("text") for choice in json.loads(line[5:]).get("choices", [])):
                    arrivals.append(time.monotonic())
    return started, arrivals, time.monotonic()


def engine_samples(port, api_key, names, timeout=5):
    """{sample name: value} of the named samples of the engine's own /metrics on 127.0.0.1:PORT.
    urllib's errors go to the caller (an HTTPError: it answered and refused)."""
    headers = {"Authorization": "Bearer " + api_key} if api_key else {}
    request = urllib.request.Request("http://127.0.0.1:%d/metrics" % port, headers=headers)
    with urllib.request.urlopen(request, timeout=timeout) as response:
        text = response.read().decode("utf-8", "replace")
    # imported here: this file also runs alone (benchmark guests) without prometheus_client, and a
    # caller whose engine did not answer never pays for the import
    from prometheus_client.parser import text_string_to_metric_families
    return dict((sample.name, sample.value) for family in text_string_to_metric_families(text)
                for sample in family.samples if sample.name in names)


def measure(port, max_tokens, api_key=""):
    """One streamed completion on 127.0.0.1:PORT, measured (a dict, see the module's docstring)."""
    started, arrivals, finished = token_arrivals(port, {
        "prompt": "Health check of the inference service:", "max_tokens": max_tokens, "stream": True,
        "temperature": 0}, api_key)
    gaps = [(b - a) * 1000 for a, b in zip(arrivals, arrivals[1:])]
    span = arrivals[-1] - arrivals[0] if len(arrivals) > 1 else 0.0
    return {
        "tokens": len(arrivals),
        "first_token_ms": round((arrivals[0] - started) * 1000, 1) if arrivals else None,
        "total_ms": round((finished - started) * 1000, 1),
        "tokens_per_second": round(len(arrivals) / (finished - started), 3),
        "decode_tokens_per_second": round((len(arrivals) - 1) / span, 3) if span else 0.0,
        "p50_ms": _gap_percentile(gaps, 0.50),
        "p99_ms": _gap_percentile(gaps, 0.99),
        "gaps_ms": [round(g, 1) for g in gaps],
    }


def port_of(exec_start):
    """The --port of a unit's ExecStart as systemctl show prints it ('{ path=... ; argv[]=... ; ... }')."""
    words = exec_start.split()
    for flag, value in zip(words, words[1:]):
        if flag == "--port":
            return int(value)
    return None


def _systemctl(*args):
    return subprocess.run(["systemctl", *args], capture_output=True, text=True, check=True).stdout


def active_instances():
    """{name: port} of the instances whose unit is active now."""
    listed = _systemctl("list-units", "--type=service", "--state=active", "--plain", "--no-legend",
                        UNIT_PREFIX + "*.service")
    instances = {}
    for line in listed.splitlines():
        unit = line.split()[0] if line.split() else ""
        if unit.startswith(UNIT_PREFIX) and unit.endswith(".service"):
            port = port_of(_systemctl("show", "--property=ExecStart", "--value", unit))
            if port is not None:
                instances[unit[len(UNIT_PREFIX):-len(".service")]] = port
    return instances


def api_key_of(name, key_dir=KEY_DIR):
    """The instance's key as the role wrote it: NAME.key (llama-server's credential), else API_KEY= in
    NAME.env (the Python server), else $LLAMA_SERVER_API_KEY; '' for none."""
    try:
        with open(os.path.join(key_dir, name + ".key"), encoding="utf-8") as handle:
            return handle.read().strip()
    except OSError:
        pass
    try:
        with open(os.path.join(key_dir, name + ".env"), encoding="utf-8") as handle:
            for line in handle:
                if line.startswith("API_KEY="):
                    return line[len("API_KEY="):].strip()
    except OSError:
        pass
    return os.environ.get("LLAMA_SERVER_API_KEY", "")


def measure_when_ready(port, max_tokens, api_key, wait_s):
    """measure(), retried while the server refuses or answers 503 (still loading), up to wait_s."""
    deadline = time.monotonic() + wait_s
    while True:
        try:
            return measure(port, max_tokens, api_key)
        except (urllib.error.URLError, ConnectionError) as exc:
            loading = not isinstance(exc, urllib.error.HTTPError) or exc.code == 503
            if not loading or time.monotonic() >= deadline:
                raise
            time.sleep(0.5)


def warm_then_measure(port, max_tokens, api_key, wait_s):
    """measure() after one short completion that is not measured (waited for as measure_when_ready waits).
    The first completion a server runs after its start pays once for what every later one finds ready (the
    model's pages read in, buffers allocated; under software emulation, every code path translated): the gate
    measures an instance just restarted and holds it to a baseline of the same instance long running, so both
    are measured warm."""
    measure_when_ready(port, min(WARM_UP_TOKENS, max_tokens), api_key, wait_s)
    return measure(port, max_tokens, api_key)


def main(argv=None):
    argv = sys.argv if argv is None else argv
    if argv[1] == "--active":
        max_tokens, wait_s = int(argv[2]), float(argv[3])
        print(json.dumps(dict((name, warm_then_measure(port, max_tokens, api_key_of(name), wait_s))
                              for name, port in sorted(active_instances().items()))))
        return
    api_key = argv[3] if len(argv) > 3 else ""
    print(json.dumps(measure(int(argv[1]), int(argv[2]), api_key)))


if __name__ == "__main__":
    sys.exit(main())
