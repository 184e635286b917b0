"""cpuinfer-slo-controller: hold the inference instances' latency by squeezing best-effort work.

Each window it reads the latency-critical (LC) instances' inter-token p99 (and time to first token,
where an objective is set) from short streamed probes, their engines' own counters, and the CPU
pressure (PSI) of their groups, and moves only the best-effort (BE) slice: its CPU quota and the
inference cores lent to it (slo_rule has the rule). LC units get no quota from here.

Fail safe: at start and at every exit it puts BE at its safe minimum (quota, its own CPUs only); the
unit's ExecStopPost runs `--restore` after a crash or a kill too, and systemd's watchdog kills a
controller that stops looping. While nothing runs, the slice's persistent drop-in holds the same
minimum. Every decision is logged (journal, JSON lines) and exported (node_exporter's textfile).

Usage: cpuinfer-slo-controller CONFIG_JSON
       cpuinfer-slo-controller --restore CONFIG_JSON
"""

import json
import logging
import os
import signal
import socket
import subprocess
import sys
import time
import urllib.error

from ansible_collections.cpuinfer.llm.plugins.module_utils import _cgroupfs
from ansible_collections.cpuinfer.llm.plugins.module_utils._cpulist import format_cpulist, parse_cpulist
from ansible_collections.cpuinfer.llm.plugins.module_utils._errors import HostError
from cpuinfer_agent import slo_rule, stream_probe, unit_metrics

LOG = logging.getLogger("cpuinfer-slo-controller")
ENGINE_COUNTERS = ("llamacpp:tokens_predicted_total", "llamacpp:tokens_predicted_seconds_total",
                   "llamacpp:requests_processing", "llamacpp:requests_deferred")
PROBE_ERRORS = (OSError, ValueError, IndexError, urllib.error.URLError)


def limits_of(config):
    return slo_rule.Limits(config["min_percent"], config["step_percent"], len(parse_cpulist(config["base_cpus"])),
                           [len(parse_cpulist(core)) for core in config["lendable_cores"]],
                           config["psi_some_max"], config["min_interval_seconds"])


def be_cpus(config, lent_cores):
    cpus = set(parse_cpulist(config["base_cpus"]))
    for core in config["lendable_cores"][:lent_cores]:
        cpus |= set(parse_cpulist(core))
    return format_cpulist(cpus)


class Systemd:
    """BE's limits through systemd (--runtime: /run, gone at reboot, where the persistent drop-in's
    minimum takes over), so systemctl show and the cgroup files never disagree."""

    def __init__(self, run=subprocess.run):
        self.run = run

    def set_be(self, slice_name, quota_percent, cpus):
        self.run(["systemctl", "set-property", "--runtime", slice_name, "CPUQuota=%d%%" % quota_percent,
                  "AllowedCPUs=%s" % cpus], check=True, capture_output=True, text=True)

    def quota_of(self, unit):
        """A unit's CPUQuotaPerSecUSec as systemd shows it ('infinity' when none)."""
        return self.run(["systemctl", "show", "--property=CPUQuotaPerSecUSec", "--value", unit], check=True,
                        capture_output=True, text=True).stdout.strip()


def notify(message, environ=None):
    """sd_notify: READY=1 once, WATCHDOG=1 every loop (a hung controller is killed, then restored)."""
    address = (os.environ if environ is None else environ).get("NOTIFY_SOCKET")
    if not address:
        return
    if address.startswith("@"):
        address = "\0" + address[1:]
    with socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM) as sock:
        sock.sendto(message.encode(), address)


def engine_counters(port, api_key):
    """The engine's own counters the controller uses, from its /metrics."""
    return stream_probe.engine_samples(port, api_key, ENGINE_COUNTERS)


def mean_token_ms(before, after):
    """Mean time per generated token between two readings of the counters (clients' own requests);
    None without tokens in between or with a restarted engine."""
    if not before or not after:
        return None
    tokens = after.get("llamacpp:tokens_predicted_total", 0) - before.get("llamacpp:tokens_predicted_total", 0)
    seconds = (after.get("llamacpp:tokens_predicted_seconds_total", 0)
               - before.get("llamacpp:tokens_predicted_seconds_total", 0))
    if tokens <= 0 or seconds < 0:
        return None
    return seconds * 1000.0 / tokens


class Controller:
    def __init__(self, config, systemd, root="/", clock=time.monotonic, wall=time.time, probe=None, counters=None):
        self.config, self.systemd, self.root = config, systemd, root
        self.clock, self.wall = clock, wall
        self.probe = probe or stream_probe.measure
        self.counters = counters or engine_counters
        self.readings = {}
        self.limits = limits_of(config)
        self.state = slo_rule.State(config["min_percent"], 0)
        self.last_change = clock()
        self.gaps = dict((i["name"], []) for i in config["instances"])
        self.first_token = dict((i["name"], []) for i in config["instances"])
        self.decisions = {}
        self.last = {"ratio": None, "psi": None, "p99_ms": {}, "mean_token_ms": {}}
        self.idle_supported = None

    # -- reading
    def observe(self):
        """One probe of every LC instance; a failed probe adds nothing (an empty window is unreadable)."""
        for instance in self.config["instances"]:
            try:
                result = self.probe(instance["port"], self.config["probe_tokens"], stream_probe.api_key_of(instance["name"]))
            except PROBE_ERRORS as exc:
                LOG.warning("probe of %s on 127.0.0.1:%s failed: %s", instance["name"], instance["port"], exc)
                continue
            self.gaps[instance["name"]].extend(result["gaps_ms"])
            if result["first_token_ms"] is not None:
                self.first_token[instance["name"]].append(result["first_token_ms"])

    def engine_means(self):
        """{instance: mean ms per token its clients got since the last window, or None}."""
        means = {}
        for instance in self.config["instances"]:
            try:
                reading = self.counters(instance["port"], stream_probe.api_key_of(instance["name"]))
            except PROBE_ERRORS as exc:
                LOG.warning("counters of %s unreadable: %s", instance["name"], exc)
                reading = None
            means[instance["name"]] = mean_token_ms(self.readings.get(instance["name"]), reading)
            self.readings[instance["name"]] = reading
        return means

    def window_ratio(self):
        """The worst objective ratio over instances: the probes' inter-token p99, the mean per token
        the engine's counters give for its clients' requests, and the probes' first token where that
        objective is set. None when no probe answered in the window: the counters alone cannot tell a
        stalled engine from an idle one."""
        ratios, p99s = [], {}
        means = self.engine_means()
        self.last["mean_token_ms"] = means
        for instance in self.config["instances"]:
            if means.get(instance["name"]) is not None:
                ratios.append(means[instance["name"]] / instance["slo_p99_ms"])
            gaps, firsts = self.gaps[instance["name"]], self.first_token[instance["name"]]
            if not gaps:
                p99s[instance["name"]] = None
                continue
            p99s[instance["name"]] = stream_probe.percentile(gaps, 0.99)
            ratios.append(p99s[instance["name"]] / instance["slo_p99_ms"])
            if instance.get("ttft_slo_ms") and firsts:
                ratios.append(stream_probe.percentile(firsts, 0.99) / instance["ttft_slo_ms"])
        self.last["p99_ms"] = p99s
        if all(p99 is None for p99 in p99s.values()):
            return None
        return max(ratios)

    def lc_pressure(self):
        """The highest cpu 'some' avg10 (percent) over the LC units' groups; None when none is readable."""
        found = []
        for instance in self.config["instances"]:
            try:
                group = _cgroupfs.unit_group(self.root, instance["unit"])
                if group:
                    some = _cgroupfs.read_signals(self.root, group)["pressure_avg10"].get("cpu", {}).get("some")
                    if some is not None:
                        found.append(some)
            except (HostError, OSError) as exc:
                LOG.warning("pressure of %s unreadable: %s", instance["unit"], exc)
        return max(found) if found else None

    # -- acting
    def apply(self, state):
        if not self.config["dry_run"]:
            self.systemd.set_be(self.config["slice"], state.quota_percent, be_cpus(self.config, state.lent_cores))
        self.state = state

    def keep_idle(self):
        """cpu.idle on the slice each window: systemd before 252 cannot set it, and a restarted slice
        loses it (from 252 on the slice's CPUWeight=idle has systemd keep it: nothing to write)."""
        try:
            group = _cgroupfs.unit_group(self.root, self.config["slice"])
            self.idle_supported = bool(group) and _cgroupfs.keep_idle(self.root, group)
        except (HostError, OSError) as exc:
            LOG.warning("cpu.idle on %s: %s", self.config["slice"], exc)

    def restore(self, why):
        safe = slo_rule.State(self.config["min_percent"], 0)
        self.systemd.set_be(self.config["slice"], safe.quota_percent, be_cpus(self.config, 0))
        self.state = safe
        LOG.info("BE at its safe minimum %d%% on CPUs %s: %s", safe.quota_percent, be_cpus(self.config, 0), why)

    def step(self):
        """One decision at the end of a window; the decision record."""
        ratio, psi = self.window_ratio(), self.lc_pressure()
        self.last.update(ratio=ratio, psi=psi)
        now = self.clock()
        new, reason = slo_rule.decide(self.state, ratio, psi, now - self.last_change, self.limits)
        before = self.state
        action = "hold" if new == before else ("cut" if new.quota_percent < before.quota_percent
                                               or new.lent_cores < before.lent_cores else "grow")
        if ratio is None:
            action = "safe"
        if new != before:
            self.apply(new)
            self.last_change = now
        self.decisions[action] = self.decisions.get(action, 0) + 1
        for name in self.gaps:
            self.gaps[name], self.first_token[name] = [], []
        record = {"time": round(self.wall(), 3), "action": action, "reason": reason, "dry_run": self.config["dry_run"],
                  "ratio": None if ratio is None else round(ratio, 3), "lc_cpu_pressure_some": psi,
                  "lc_p99_ms": dict((k, None if v is None else round(v, 1)) for k, v in self.last["p99_ms"].items()),
                  "lc_mean_token_ms": dict((k, None if v is None else round(v, 1)) for k, v in self.last["mean_token_ms"].items()),
                  "before": {"quota_percent": before.quota_percent, "lent_cores": before.lent_cores},
                  "after": {"quota_percent": new.quota_percent, "lent_cores": new.lent_cores,
                            "cpus": be_cpus(self.config, new.lent_cores)}}
        (LOG.info if action != "hold" else LOG.debug)("%s%s", "dry run, not applied: " if self.config["dry_run"] else "", reason)
        return record

    # -- reporting
    def families(self):
        slice_name = self.config["slice"]
        rows = [
            ("be_cpu_quota_ratio", "gauge", "CPU quota the best-effort slice holds (1 = one CPU).", {}, self.state.quota_percent / 100.0),
            ("be_cpus", "gauge", "CPUs the best-effort slice may run on.", {}, self.limits.cpus(self.state.lent_cores)),
            ("be_lent_cores", "gauge", "Inference cores lent to best-effort work.", {}, self.state.lent_cores),
            ("be_safe_minimum_ratio", "gauge", "The quota best-effort work falls back to.", {}, self.config["min_percent"] / 100.0),
        ]
        if self.last["ratio"] is not None:
            rows.append(("lc_slo_ratio", "gauge", "Worst LC latency over its objective in the last window.", {}, self.last["ratio"]))
        if self.last["psi"] is not None:
            rows.append(("lc_cpu_pressure_some_ratio", "gauge", "Highest LC cpu 'some' PSI avg10 (0..1).", {}, self.last["psi"] / 100.0))
        if self.idle_supported is not None:
            rows.append(("be_cpu_idle", "gauge", "1 when the slice runs with cpu.idle.", {}, 1 if self.idle_supported else 0))
        families = []
        for name, kind, help_text, labels, value in rows:
            family = unit_metrics.Family("cpuinfer_slo_controller_" + name, kind, help_text)
            family.add(dict(labels, slice=slice_name), float(value))
            families.append(family)
        p99 = unit_metrics.Family("cpuinfer_slo_controller_lc_p99_seconds", "gauge", "LC inter-token p99 in the last window.")
        slo = unit_metrics.Family("cpuinfer_slo_controller_lc_slo_seconds", "gauge", "LC inter-token p99 objective.")
        # by unit, as every per-instance metric of the collection ('instance' is Prometheus's own label)
        for instance in self.config["instances"]:
            slo.add({"unit": instance["unit"]}, instance["slo_p99_ms"] / 1000.0)
            if self.last["p99_ms"].get(instance["name"]) is not None:
                p99.add({"unit": instance["unit"]}, self.last["p99_ms"][instance["name"]] / 1000.0)
        decisions = unit_metrics.Family("cpuinfer_slo_controller_decisions_total", "counter", "Decisions by action.")
        for action in ("hold", "grow", "cut", "safe"):
            decisions.add({"slice": slice_name, "action": action}, float(self.decisions.get(action, 0)))
        return families + [p99, slo, decisions]


def run(config, controller, sleep=time.sleep, clock=time.monotonic):
    controller.restore("starting")
    notify("READY=1")
    window_end = clock() + config["window_seconds"]
    while True:
        controller.observe()
        if clock() >= window_end:
            controller.keep_idle()
            record = controller.step()
            with open(config["decision_log"], "a", encoding="utf-8") as log:
                log.write(json.dumps(record) + "\n")
            if config.get("textfile"):
                unit_metrics.write_textfile(config["textfile"], controller.families())
            window_end = clock() + config["window_seconds"]
        notify("WATCHDOG=1")
        sleep(config["probe_interval_seconds"])


def _stop(signum, frame):
    raise SystemExit(0)


def main(argv=None):
    argv = sys.argv[1:] if argv is None else argv
    logging.basicConfig(level=logging.INFO, format="%(message)s", stream=sys.stderr)
    restore_only = argv[:1] == ["--restore"]
    with open(argv[-1], encoding="utf-8") as handle:
        config = json.load(handle)
    controller = Controller(config, Systemd())
    if restore_only:
        controller.restore("the controller stopped (ExecStopPost)")
        return 0
    signal.signal(signal.SIGTERM, _stop)
    LOG.info("controlling %s for %s: safe minimum %d%%, step %d%%, lendable cores %s", config["slice"],
             ", ".join("%s (p99 %s ms)" % (i["name"], i["slo_p99_ms"]) for i in config["instances"]),
             config["min_percent"], config["step_percent"], " ".join(config["lendable_cores"]) or "none")
    try:
        run(config, controller)
    finally:
        controller.restore("the controller is exiting")
    return 0


if __name__ == "__main__":
    sys.exit(main())
