"""Inside the benchmark VM: interleave the isolation variants round by round and print raw JSON.

Each variant is (service port, neighbour unit or none). Per round every variant runs once, in the
same order, so slow drifts of the machine hit all variants alike; the rounds show the noise.
Usage: python3 guest_runner.py ROUNDS COMPLETIONS_PER_VARIANT TOKENS [TUNED_UNIT [VARIANT,...]]
(every variant unless named; the main job's demonstration measures the CPU neighbour only)
"""

import json
import os
import subprocess
import sys
import time
import urllib.error
import urllib.request

import stream_probe

TUNED_PORT, UNTUNED_PORT = 8081, 8082
VARIANTS = [
    ("a_untuned", UNTUNED_PORT, None),
    ("a_tuned", TUNED_PORT, None),
    ("b_untuned_neighbour", UNTUNED_PORT, "bench-neighbour-anywhere.service"),
    ("c_tuned_neighbour", TUNED_PORT, "bench-neighbour-housekeeping.service"),
    ("d_untuned_membw_neighbour", UNTUNED_PORT, "bench-membw-anywhere.service"),
    ("e_tuned_membw_neighbour", TUNED_PORT, "bench-membw-housekeeping.service"),
]
SETTLE_SECONDS = 2
API_KEY = os.environ.get("CPUINFER_PROBE_API_KEY", "")  # the tuned service's, where it has one


def systemctl(*args):
    subprocess.run(["systemctl", *args], check=True)


def unit_settings(unit):
    out = subprocess.run(["systemctl", "show", "--property=AllowedCPUs,CPUWeight,Slice,ExecStart", unit],
                         capture_output=True, text=True, check=True).stdout
    settings = dict(line.split("=", 1) for line in out.splitlines() if "=" in line)
    argv = settings.pop("ExecStart", "")
    settings["n_threads"] = argv.split("--threads ")[1].split()[0] if "--threads " in argv else None
    return settings


# llama-server's own counters (--metrics): tokens predicted and the seconds it spent predicting them.
# Their rate is the service's decode rate as the server saw it, which the measuring client (this
# process, on the housekeeping CPU beside the neighbour on a tuned host) cannot slow down.
PREDICTED_TOKENS, PREDICTED_SECONDS = "llamacpp:tokens_predicted_total", "llamacpp:tokens_predicted_seconds_total"


def parse_counters(exposition):
    values = {}
    for line in exposition.splitlines():
        name, dummy_space, value = line.partition(" ")
        if name in (PREDICTED_TOKENS, PREDICTED_SECONDS):
            values[name] = float(value)
    return values if len(values) == 2 else None


def server_counters(port):
    """The prediction counters of the server on PORT; None where it has no /metrics."""
    headers = {"Authorization": "Bearer " + API_KEY} if API_KEY else {}
    try:
        with urllib.request.urlopen(urllib.request.Request("http://127.0.0.1:%d/metrics" % port, headers=headers),
                                    timeout=30) as response:
            return parse_counters(response.read().decode())
    except (urllib.error.URLError, OSError):
        return None


def server_rate(before, after):
    """Tokens per second of prediction between two readings of the counters; None without both."""
    if not before or not after or after[PREDICTED_SECONDS] <= before[PREDICTED_SECONDS]:
        return None
    return round((after[PREDICTED_TOKENS] - before[PREDICTED_TOKENS])
                 / (after[PREDICTED_SECONDS] - before[PREDICTED_SECONDS]), 3)


def measure_completion(port, tokens):
    before = server_counters(port)
    sample = stream_probe.measure(port, tokens, API_KEY)
    sample["server_tokens_per_second"] = server_rate(before, server_counters(port))
    return sample


def measure_variant(port, neighbour, completions, tokens):
    if neighbour:
        systemctl("start", neighbour)
        time.sleep(SETTLE_SECONDS)
    try:
        return [measure_completion(port, tokens) for dummy_completion in range(completions)]
    finally:
        if neighbour:
            systemctl("stop", neighbour)
            time.sleep(SETTLE_SECONDS)


def main():
    rounds, completions, tokens = (int(a) for a in sys.argv[1:4])
    tuned_unit = sys.argv[4] if len(sys.argv) > 4 else "cpuinfer-llama-bench.service"
    chosen = sys.argv[5].split(",") if len(sys.argv) > 5 else [name for name, dummy_port, dummy_unit in VARIANTS]
    variants = [variant for variant in VARIANTS if variant[0] in chosen]
    for port in (TUNED_PORT, UNTUNED_PORT):
        stream_probe.measure(port, tokens, API_KEY)  # warm-up: page in the model, fill caches
    results = []
    for round_index in range(rounds):
        for name, port, neighbour in variants:
            for sample in measure_variant(port, neighbour, completions, tokens):
                sample.update(variant=name, round=round_index)
                results.append(sample)
    print(json.dumps({
        "units": {unit: unit_settings(unit) for unit in
                  [tuned_unit, "bench-untuned.service", "system.slice"] + [unit for dummy_name, dummy_port, unit in variants if unit]},
        "nproc": subprocess.run(["nproc", "--all"], capture_output=True, text=True, check=True).stdout.strip(),
        "samples": results,
    }))


if __name__ == "__main__":
    main()
