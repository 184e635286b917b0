"""Inside the benchmark VM: streamed completions on the instance (inference CPU 1) while a timer-heavy
neighbour (stress-ng timers and a cyclic sleeper) runs on the housekeeping CPU 0 in system.slice; prints
raw JSON: per completion tokens/s and inter-token gaps, and what the kernel booted with.
Usage: python3 nohz_runner.py COMPLETIONS TOKENS API_KEY"""

import json
import subprocess
import sys
import time

import stream_probe

PORT = 8081
NEIGHBOUR = "bench-timer-neighbour"


def read(path):
    with open(path, encoding="ascii") as handle:
        return handle.read().strip()


def interrupts_on(cpu):
    """Local timer interrupts (LOC) on CPU so far: the tick nohz_full stops while one task runs."""
    for line in read("/proc/interrupts").splitlines():
        fields = line.split()
        if fields and fields[0] == "LOC:":
            return int(fields[1 + cpu])
    return None


def main():
    completions, tokens, key = int(sys.argv[1]), int(sys.argv[2]), sys.argv[3]
    subprocess.run(["systemd-run", "--unit", NEIGHBOUR, "--slice", "system.slice", "--collect",
                    "stress-ng", "--timer", "1", "--timer-freq", "20000", "--cyclic", "1", "--cyclic-sleep", "50000",
                    "--timeout", "3600"], check=True)
    time.sleep(2)
    try:
        stream_probe.measure(PORT, tokens, key)  # warm-up
        loc_before, started = interrupts_on(1), time.monotonic()
        samples = [stream_probe.measure(PORT, tokens, key) for dummy in range(completions)]
        loc_rate = (interrupts_on(1) - loc_before) / (time.monotonic() - started)
    finally:
        subprocess.run(["systemctl", "stop", NEIGHBOUR], check=False)
    print(json.dumps({
        "cmdline": read("/proc/cmdline"),
        "nohz_full": read("/sys/devices/system/cpu/nohz_full"),
        "neighbour_cpus": subprocess.run(["systemctl", "show", "--property=AllowedCPUs", "--value", "system.slice"],
                                         capture_output=True, text=True, check=True).stdout.strip(),
        "local_timer_interrupts_per_second_cpu1": round(loc_rate, 1),
        "samples": [dict((k, s[k]) for k in ("tokens", "tokens_per_second", "p50_ms", "p99_ms", "gaps_ms")) for s in samples],
    }))


if __name__ == "__main__":
    main()
