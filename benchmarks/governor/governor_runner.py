"""Inside the demonstration VM: a neighbour's load ramps up; p99 inter-token latency per phase with a
fixed CPU quota and with the SLO governor. Prints raw JSON.

The neighbour runs inside the service's own cgroup (a co-located helper sharing the unit's quota):
that is the slowdown a quota can cure. A neighbour in another unit is kept away by the cpuset and
weights of host_tuning (docs/benchmarks/isolation.md), and raising a quota does nothing against it.

1. calibrate: the service alone at its configured quota; SLO = 1.1 x that p99 (met when calm).
2. alternate runs, `repeats` times: fixed (governor stopped, quota back to configured) and governed
   (governor started with that SLO); each run walks the same phases: the neighbour at 0, 25, 50 and
   75 % of a CPU (stress-ng --cpu-load).
Usage: python3 governor_runner.py PHASE_SECONDS REPEATS
"""

import json
import os
import signal
import subprocess
import sys
import time

import stream_probe

PORT, TOKENS = 8081, 16
UNIT = "cpuinfer-llama-bench.service"
GOVERNOR = "cpuinfer-slo-governor@bench.service"
CONFIG = "/etc/cpuinfer/slo-governor-bench.json"
DECISIONS = "/var/log/cpuinfer/slo-governor-bench.jsonl"
PHASES = [("calm", 0), ("neighbour 25 %", 25), ("neighbour 50 %", 50), ("neighbour 75 %", 75)]


def sh(*argv):
    return subprocess.run(argv, check=True, capture_output=True, text=True).stdout.strip()


def quota():
    return sh("systemctl", "show", "--property=CPUQuotaPerSecUSec", "--value", UNIT)


def set_quota(percent):
    sh("systemctl", "set-property", "--runtime", UNIT, "CPUQuota=%d%%" % percent)


def unit_procs():
    return "/sys/fs/cgroup%s/cgroup.procs" % sh("systemctl", "show", "--property=ControlGroup", "--value", UNIT)


def neighbour(load, running):
    """Stop the running neighbour; start one at load % of a CPU inside the service's cgroup."""
    if running is not None:
        os.killpg(running.pid, signal.SIGTERM)
        running.wait()
    if not load:
        return None
    procs = unit_procs()

    def join_the_service():
        os.setsid()
        with open(procs, "w", encoding="ascii") as handle:
            handle.write(str(os.getpid()))
    return subprocess.Popen(["/usr/bin/stress-ng", "--cpu", "1", "--cpu-load", str(load), "--quiet"],
                            preexec_fn=join_the_service)


def run_phase(seconds):
    gaps, rates, quotas = [], [], []
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        sample = stream_probe.measure(PORT, TOKENS)
        gaps.extend(sample["gaps_ms"])
        rates.append(sample["tokens_per_second"])
        quotas.append(quota())
    return {"gaps_ms": gaps, "tokens_per_second": rates, "quota_seen": quotas}


def walk(mode, seconds):
    phases, running = [], None
    for label, load in PHASES:
        running = neighbour(load, running)
        time.sleep(2)
        result = run_phase(seconds)
        result.update(phase=label, mode=mode)
        phases.append(result)
    neighbour(0, running)
    return phases


def main():
    seconds, repeats = int(sys.argv[1]), int(sys.argv[2])
    sh("systemctl", "stop", GOVERNOR)
    configured = round(float(quota().rstrip("ms")) / 10)  # e.g. "400ms" a second = 40 %
    set_quota(configured)
    stream_probe.measure(PORT, TOKENS)  # warm-up
    calm = run_phase(seconds)
    slo = round(1.1 * stream_probe.percentile(calm["gaps_ms"], 0.99), 1)
    with open(CONFIG, encoding="utf-8") as handle:
        config = json.load(handle)
    config.update(slo_p99_ms=slo, dry_run=False)
    with open(CONFIG, "w", encoding="utf-8") as handle:
        json.dump(config, handle)
    runs = []
    for repeat in range(repeats):
        for mode in ("fixed", "governed"):
            set_quota(configured)
            open(DECISIONS, "w", encoding="utf-8").close()
            if mode == "governed":
                sh("systemctl", "start", GOVERNOR)
            phases = walk(mode, seconds)
            if mode == "governed":
                sh("systemctl", "stop", GOVERNOR)
            with open(DECISIONS, encoding="utf-8") as handle:
                decisions = [json.loads(line) for line in handle if line.strip()]
            runs.append({"repeat": repeat, "mode": mode, "phases": phases, "decisions": decisions})
    set_quota(configured)
    print(json.dumps({"slo_p99_ms": slo, "calibration": calm, "configured_quota_percent": configured, "runs": runs}))


if __name__ == "__main__":
    main()
