"""Inside the benchmark VM: the latency-critical (LC) service under a client load that alternates calm
(clients paused: the inference CPU idle) and busy phases, with best-effort (BE) work on the same host
that burns CPU and streams memory (stress-ng --cpu and --stream). Prints raw JSON.

1. calibrate: the service alone under the busy load; SLO = 1.25 x its p99 inter-token gap.
2. `repeats` rounds of four modes, in turn, each walking calm, busy, calm, busy phases:
   - none: a host without this collection - the service and BE each in an ordinary slice with the
     default weight on every CPU, llama.cpp's threads = every CPU (the service restarted so);
   - shared: BE in a slice of its own with the default weight and every CPU (no control);
   - static: BE in host_tuning's best-effort slice (housekeeping CPU, cpu.idle), no quota,
     no controller (host_tuning's housekeeping/inference split);
   - controller: the same slice moved by cpuinfer-slo-controller with that SLO.
Per mode: every client stream's token arrivals (inter-token gaps, by 10-s window), tokens, stress-ng's
own bogo-ops per second for each stressor, the inference CPU's idle share per phase, and under the
controller its decisions with the clients' real p99 of each decision's window beside its estimate.
Usage: python3 slo_runner.py PHASE_SECONDS REPEATS
"""

import json
import os
import re
import subprocess
import sys
import threading
import time

import stream_probe

PORT, TOKENS = 8081, 32
SERVICE = "cpuinfer-llama-bench.service"
UNIT_FILE = "/etc/systemd/system/" + SERVICE
UNTUNED_DROPIN = "/run/systemd/system/%s.d/90-bench-untuned.conf" % SERVICE
INFERENCE_CPU = "cpu1"
THREADS = re.compile(r"--threads \d+ --threads-batch \d+")
KEY_FILE = "/etc/cpuinfer/llama-server/bench.key"
CONTROLLER = "cpuinfer-slo-controller.service"
CONFIG = "/etc/cpuinfer/slo-controller.json"
DECISIONS = "/var/log/cpuinfer/slo-controller.jsonl"
BE_SLICE = "cpuinfer-besteffort.slice"
SHARED_SLICE = "cpuinfer-shared.slice"
BE_UNIT = "cpuinfer-bench-besteffort"
PHASES = [("calm", 0, 0.0), ("busy", 2, 0.0), ("calm", 0, 0.0), ("busy", 2, 0.0)]  # (name, clients, pause s)
MODES = ("none", "shared", "static", "controller")
SETTLE_SECONDS = 40
STRESSOR = re.compile(r"^\s*-\s*stressor:\s*(\S+)")
RATE = re.compile(r"^\s*bogo-ops-per-second-real-time:\s*([0-9.]+)")


def sh(*argv):
    return subprocess.run(argv, check=True, capture_output=True, text=True).stdout.strip()


def client(key, until, pause, arrivals):
    """Streams one after another until `until`; each stream's token arrival times go to arrivals."""
    while time.monotonic() < until:
        try:
            dummy_started, times, dummy_finished = stream_probe.token_arrivals(PORT, {
                "prompt": "Write a long story:", "max_tokens": TOKENS, "stream": True, "ignore_eos": True}, key)
        except OSError:
            continue
        arrivals.append(times)
        if pause:
            time.sleep(pause)


def cpu_times(cpu):
    """(idle, total) jiffies of one CPU from /proc/stat."""
    with open("/proc/stat", encoding="utf-8") as handle:
        for line in handle:
            fields = line.split()
            if fields[0] == cpu:
                values = [int(v) for v in fields[1:]]
                return values[3] + values[4], sum(values)
    raise ValueError("no %s in /proc/stat" % cpu)


def phase(key, seconds, clients, pause):
    until = time.monotonic() + seconds
    if not clients:
        time.sleep(seconds)
        return []
    arrivals = []
    threads = [threading.Thread(target=client, args=(key, until, pause, arrivals)) for dummy in range(clients)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    return arrivals


def walk(key, seconds):
    """Every phase in turn; (streams as lists of arrival times, the walk's start and end, the inference
    CPU's idle share per phase)."""
    started = time.monotonic()
    streams, idle = [], []
    for dummy_name, clients, pause in PHASES:
        before = cpu_times(INFERENCE_CPU)
        streams.extend(phase(key, seconds, clients, pause))
        after = cpu_times(INFERENCE_CPU)
        idle.append(round((after[0] - before[0]) / max(1, after[1] - before[1]), 3))
    return streams, started, time.monotonic(), idle


def windows(streams, started, ended, width=10.0):
    """p99 inter-token gap (ms) per `width`-s window of the walk, by the arrival of a gap's second token."""
    count = int((ended - started) // width) + 1
    gaps = [[] for dummy in range(count)]
    for times in streams:
        for before, after in zip(times, times[1:]):
            gaps[min(count - 1, int((after - started) // width))].append((after - before) * 1000)
    return [round(stream_probe.percentile(g, 0.99), 1) for g in gaps if g]


def client_p99_by_decision(streams, decisions, wall_minus_monotonic, window_seconds):
    """Beside each controller decision, the clients' real p99 inter-token gap (ms) of the window it
    closed, where the clients streamed in it: what its estimate from the engine's mean is tested against."""
    gaps = [(after, (after - before) * 1000) for times in streams for before, after in zip(times, times[1:])]
    for decision in decisions:
        end = decision["time"] - wall_minus_monotonic
        inside = [gap for at, gap in gaps if end - window_seconds < at <= end]
        decision["clients_p99_ms"] = round(stream_probe.percentile(inside, 0.99), 1) if len(inside) >= 10 else None
    return decisions


def untuned_service(on, key):
    """The service as a host without this collection runs it: an ordinary slice, the default weight, every
    CPU, llama.cpp's threads = every CPU (a runtime drop-in over the converged unit), or back as converged."""
    if on:
        with open(UNIT_FILE, encoding="utf-8") as handle:
            unit = handle.read().replace("\\\n", " ")
        exec_start = next(line for line in unit.splitlines() if line.startswith("ExecStart="))
        every = os.cpu_count()
        os.makedirs(os.path.dirname(UNTUNED_DROPIN), exist_ok=True)
        with open(UNTUNED_DROPIN, "w", encoding="utf-8") as handle:
            handle.write("[Service]\nSlice=cpuinfer-untuned.slice\nCPUWeight=\nAllowedCPUs=\nExecStart=\n%s\n" % THREADS.sub(
                "--threads %d --threads-batch %d" % (every, every), exec_start))
    elif os.path.exists(UNTUNED_DROPIN):
        os.unlink(UNTUNED_DROPIN)
    sh("systemctl", "daemon-reload")
    sh("systemctl", "restart", SERVICE)
    stream_probe.measure_when_ready(PORT, 2, key, 600)  # the probe's own wait: refused or 503 while it loads


def be_start(slice_name, seconds, yaml_path):
    # not --quiet: it leaves the YAML without its metrics section
    sh("systemd-run", "--unit", BE_UNIT, "--collect", "--slice", slice_name, "/usr/bin/stress-ng", "--cpu", "2",
       "--stream", "1", "--timeout", "%ds" % seconds, "--metrics-brief", "--yaml", yaml_path)


def be_work(yaml_path):
    """{stressor: bogo-ops per second (real time)} from stress-ng's YAML."""
    rates, current = {}, None
    with open(yaml_path, encoding="utf-8") as handle:
        for line in handle:
            found = STRESSOR.match(line)
            if found:
                current = found.group(1)
            found = RATE.match(line)
            if found and current:
                rates[current] = float(found.group(1))
    return rates


def wait_gone(unit, seconds):
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        if subprocess.run(["systemctl", "is-active", "--quiet", unit], check=False).returncode != 0:
            return
        time.sleep(1)
    sh("systemctl", "stop", unit)


def static_split():
    """No controller; host_tuning's slice without the controller's safe-minimum quota."""
    sh("systemctl", "stop", CONTROLLER)
    sh("systemctl", "set-property", "--runtime", BE_SLICE, "CPUQuota=")


def run_mode(mode, key, seconds, window_seconds):
    if mode == "controller":
        open(DECISIONS, "w", encoding="utf-8").close()
        sh("systemctl", "start", CONTROLLER)
        # a controller runs for days on a host: it settles (grows from its safe minimum with the clients
        # paused) before the best-effort work and the clients start, instead of ramping inside every run
        time.sleep(SETTLE_SECONDS)
    else:
        static_split()
    if mode == "none":
        untuned_service(True, key)
    slice_name = BE_SLICE if mode in ("static", "controller") else SHARED_SLICE
    yaml_path = "/tmp/bench-slo-%s.yaml" % mode
    total = seconds * len(PHASES)
    be_start(slice_name, total + 5, yaml_path)
    time.sleep(2)
    wall_minus_monotonic = time.time() - time.monotonic()
    streams, started, ended, idle = walk(key, seconds)
    wait_gone(BE_UNIT, 60)
    decisions = []
    if mode == "controller":
        sh("systemctl", "stop", CONTROLLER)
        with open(DECISIONS, encoding="utf-8") as handle:
            decisions = [json.loads(line) for line in handle if line.strip()]
        client_p99_by_decision(streams, decisions, wall_minus_monotonic, window_seconds)
    if mode == "none":
        untuned_service(False, key)
    return {"mode": mode, "window_p99_ms": windows(streams, started, ended),
            "tokens": sum(len(times) for times in streams), "seconds": round(ended - started, 1),
            "be_bogo_ops_per_second": be_work(yaml_path), "inference_cpu_idle_by_phase": idle,
            "decisions": decisions}


def main():
    seconds, repeats = int(sys.argv[1]), int(sys.argv[2])
    with open(KEY_FILE, encoding="utf-8") as handle:
        key = handle.read().strip()
    static_split()
    phase(key, 5, 1, 0.0)  # warm-up
    alone = phase(key, seconds, 2, 0.0)
    gaps = [(b - a) * 1000 for times in alone for a, b in zip(times, times[1:])]
    slo = round(1.25 * stream_probe.percentile(gaps, 0.99), 1)
    with open(CONFIG, encoding="utf-8") as handle:
        config = json.load(handle)
    for instance in config["instances"]:
        instance["slo_p99_ms"] = slo
    with open(CONFIG, "w", encoding="utf-8") as handle:
        json.dump(config, handle)
    runs = []
    for repeat in range(repeats):
        for mode in MODES:
            result = run_mode(mode, key, seconds, config["window_seconds"])
            result["repeat"] = repeat
            runs.append(result)
    print(json.dumps({"slo_p99_ms": slo, "calibration_p99_ms": round(stream_probe.percentile(gaps, 0.99), 1),
                      "phases": [{"name": n, "clients": c, "pause_s": p} for n, c, p in PHASES],
                      "phase_seconds": seconds, "settle_seconds": SETTLE_SECONDS, "config": config, "runs": runs}))


if __name__ == "__main__":
    main()
