"""cpuinfer-slo-controller: hold the inference instances' latency by squeezing best-effort work.

Each window it reads the latency-critical (LC) instances' latency - passive first: their engines' own
counters for the clients' requests, and a short streamed probe only where client traffic gave no reading,
within a budget of the instance's token capacity (slo_reading has how) - and the CPU pressure (PSI) of
their groups, and moves only the best-effort (BE) slice: its CPU quota and the inference cores lent to it
(slo_rule has the rule). LC units get no quota from here.

Fail safe: at every exit it puts BE at its safe minimum (quota, its own CPUs only), and at start too
unless a clean stop (SIGTERM) left its last decision less than resume_seconds ago; the unit's
ExecStopPost runs `--restore` after a crash or a kill too, and systemd's watchdog kills a
controller that stops looping. While nothing runs, the slice's persistent drop-in holds the same
minimum. Every decision is logged (journal, JSON lines) and exported (node_exporter's textfile).

Usage: cpuinfer-slo-controller CONFIG_JSON
       cpuinfer-slo-controller --restore CONFIG_JSON
"""

import collections
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
from cpuinfer_agent import slo_reading, slo_rule, stream_probe, unit_metrics

LOG = logging.getLogger("cpuinfer-slo-controller")
TOKENS, DEFERRED = slo_reading.TOKENS, "llamacpp:requests_deferred"
ENGINE_COUNTERS = (TOKENS, slo_reading.SECONDS, DEFERRED)
SOURCES = ("clients", "probe", "carried", "none")
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


class Controller:
    def __init__(self, config, systemd, root="/", clock=time.monotonic, wall=time.time, probe=None, counters=None):
        self.config, self.systemd, self.root = config, systemd, root
        self.clock, self.wall = clock, wall
        self.probe = probe or stream_probe.measure
        self.counters = counters or engine_counters
        self.limits = limits_of(config)
        self.state = slo_rule.State(config["min_percent"], 0)
        self.started = self.last_change = clock()
        names = [i["name"] for i in config["instances"]]
        self.budgets = dict((i["name"], slo_reading.ProbeBudget(
            config["probe_budget_share"] * i["token_capacity_per_second"], config["probe_tokens"], self.started))
            for i in config["instances"])
        # counters: at the window's start and the latest; when the clients' tokens or a probe last gave a reading
        self.window_start, self.latest = {}, {}
        self.client_seen_at, self.probed_at, self.readings = {}, {}, {}
        # the probes' own tokens, which the engine's counters count too: since the last reading, and in the window
        self.own_unread, self.own_in_window = dict((name, 0) for name in names), dict((name, 0) for name in names)
        self.gaps = dict((name, []) for name in names)
        self.first_token = dict((name, []) for name in names)
        self.decisions, self.sources = {}, dict((name, collections.Counter()) for name in names)
        self.last = {"ratio": None, "psi": None, "instances": {}}
        self.idle_supported = None

    # -- reading
    def observe(self):
        """Every probe interval: the engines' counters (did the clients' requests give a reading?), then a
        probe of an instance, where its budget allows, only when nothing gave a reading for a window, or
        when requests wait for a slot under a time-to-first-token objective (a wait the counters' mean per
        token does not show), once a window."""
        now = self.clock()
        for instance in self.config["instances"]:
            name = instance["name"]
            try:
                reading = self.counters(instance["port"], stream_probe.api_key_of(name))
            except PROBE_ERRORS as exc:
                LOG.warning("counters of %s unreadable: %s", name, exc)
                reading = None
            grown = slo_reading.counter_delta(self.latest.get(name), reading, TOKENS)
            if grown is not None and grown > self.own_unread[name]:
                self.client_seen_at[name] = now
            self.own_unread[name] = 0
            self.latest[name] = reading
            if self.window_start.get(name) is None:  # the first reading, or the first after an unreadable one
                self.window_start[name] = reading
            # a window counts from the start too: clients already streaming need no probe at all
            read_at = max(t for t in (self.started, self.client_seen_at.get(name), self.probed_at.get(name)) if t is not None)
            waiting = bool(instance.get("ttft_slo_ms") and reading and reading.get(DEFERRED)) and not self.gaps[name]
            if now - read_at < self.config["window_seconds"] and not waiting:
                continue
            if self.budgets[name].allows(now):
                self.probe_instance(instance, now)

    def probe_instance(self, instance, now):
        """One probe; its tokens are charged to the budget (a failed one as if it had run: a refusing
        engine is not probed every interval)."""
        name = instance["name"]
        self.probed_at[name] = now
        try:
            result = self.probe(instance["port"], self.config["probe_tokens"], stream_probe.api_key_of(name))
        except PROBE_ERRORS as exc:
            LOG.warning("probe of %s on 127.0.0.1:%s failed: %s", name, instance["port"], exc)
            self.budgets[name].spend(self.config["probe_tokens"], now)
            return
        tokens = len(result["gaps_ms"]) + 1  # the first token has no gap before it
        self.budgets[name].spend(tokens, now)
        self.own_unread[name] += tokens
        self.own_in_window[name] += tokens
        self.gaps[name].extend(result["gaps_ms"])
        if result["first_token_ms"] is not None:
            self.first_token[name].append(result["first_token_ms"])

    def instance_reading(self, instance, now):
        """The window's reading of one instance: {source, ratio, p99_ms (the worse read), mean_token_ms,
        estimated_p99_ms, probe_p99_ms}."""
        name, slo = instance["name"], instance["slo_p99_ms"]
        start, latest = self.window_start.get(name), self.latest.get(name)
        clients = slo_reading.counter_delta(start, latest, TOKENS)
        # a window whose only finished tokens were the probes' has no reading of the clients
        mean = slo_reading.mean_token_ms(start, latest) if clients and clients > self.own_in_window[name] else None
        estimated = slo_reading.estimated_p99_ms(mean, self.config["tail_factor"])
        gaps, firsts = self.gaps[name], self.first_token[name]
        probe_p99 = stream_probe.percentile(gaps, 0.99) if gaps else None
        probe_ratio = None if probe_p99 is None else probe_p99 / slo
        if probe_ratio is not None and instance.get("ttft_slo_ms") and firsts:
            probe_ratio = max(probe_ratio, stream_probe.percentile(firsts, 0.99) / instance["ttft_slo_ms"])
        ratio, source = slo_reading.window_reading(None if estimated is None else estimated / slo, probe_ratio,
                                                   self.readings.get(name), now,
                                                   self.budgets[name].max_age(self.config["window_seconds"]))
        if source in ("clients", "probe"):
            self.readings[name] = slo_reading.Reading(ratio, source, now)
        read = [v for v in (estimated, probe_p99) if v is not None]
        return {"source": source or "none", "ratio": ratio, "p99_ms": max(read) if read else None,
                "mean_token_ms": mean, "estimated_p99_ms": estimated, "probe_p99_ms": probe_p99}

    def window_ratio(self):
        """The worst objective ratio over instances; None when no instance gave a reading: the counters alone
        cannot tell a stalled engine from an idle one, and a probe is the only reading then."""
        now = self.clock()
        readings = {}
        for instance in self.config["instances"]:
            name = instance["name"]
            readings[name] = self.instance_reading(instance, now)
            self.sources[name][readings[name]["source"]] += 1
            self.window_start[name] = self.latest.get(name)
            self.own_in_window[name] = self.own_unread[name]  # a probe after the last reading shows in the next window
        self.last["instances"] = readings
        ratios = [r["ratio"] for r in readings.values() if r["ratio"] is not None]
        return max(ratios) if ratios else None

    def probe_share(self, name, now=None):
        """The controller's own tokens since it started, as a share of the instance's token capacity."""
        instance = next(i for i in self.config["instances"] if i["name"] == name)
        elapsed = (self.clock() if now is None else now) - self.started
        capacity = instance["token_capacity_per_second"] * elapsed
        return self.budgets[name].spent / capacity if capacity > 0 else 0.0

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

    def keep_for_restart(self):
        """A clean stop (SIGTERM: a restart, a converge) leaves its last decision for the next start."""
        with open(self.config["resume_file"], "w", encoding="utf-8") as handle:
            json.dump({"time": self.wall(), "quota_percent": self.state.quota_percent,
                       "lent_cores": self.state.lent_cores}, handle)

    def start(self):
        """Resume from the decision a clean stop left less than resume_seconds ago (read once: a crash after
        this start finds none), else the safe minimum."""
        kept = None
        try:
            with open(self.config["resume_file"], encoding="utf-8") as handle:
                kept = json.load(handle)
            os.unlink(self.config["resume_file"])
        except (OSError, ValueError):
            pass
        state = slo_rule.resumable(kept, self.wall(), self.config["resume_seconds"], self.limits)
        if state is None:
            self.restore("starting")
            return
        self.apply(state)
        self.last_change = self.clock()
        LOG.info("resuming from the decision before a clean stop: BE %d%% on CPUs %s", state.quota_percent,
                 be_cpus(self.config, state.lent_cores))

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
                  "lc": dict((name, dict((key, value if not isinstance(value, float) else round(value, 3 if key == "ratio" else 1))
                                         for key, value in reading.items())) for name, reading in self.last["instances"].items()),
                  "probe_tokens": dict((name, budget.spent) for name, budget in self.budgets.items()),
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
        per_unit = [
            unit_metrics.Family("cpuinfer_slo_controller_lc_p99_seconds", "gauge",
                                "LC inter-token p99 read in the last window (clients' estimate or probe, the worse)."),
            unit_metrics.Family("cpuinfer_slo_controller_lc_slo_seconds", "gauge", "LC inter-token p99 objective."),
            unit_metrics.Family("cpuinfer_slo_controller_probes_total", "counter", "Probes the controller sent."),
            unit_metrics.Family("cpuinfer_slo_controller_probe_tokens_total", "counter", "Tokens the controller's probes cost."),
            unit_metrics.Family("cpuinfer_slo_controller_probe_share_ratio", "gauge",
                                "The probes' tokens over the instance's token capacity since the controller started."),
            unit_metrics.Family("cpuinfer_slo_controller_readings_total", "counter",
                                "Windows by where the instance's reading came from (none: unreadable)."),
        ]
        p99, slo, probes, probe_tokens, share, readings = per_unit
        now = self.clock()
        # by unit, as every per-instance metric of the collection ('instance' is Prometheus's own label)
        for instance in self.config["instances"]:
            labels, name = {"unit": instance["unit"]}, instance["name"]
            slo.add(labels, instance["slo_p99_ms"] / 1000.0)
            read = self.last["instances"].get(name, {})
            if read.get("p99_ms") is not None:
                p99.add(labels, read["p99_ms"] / 1000.0)
            probes.add(labels, float(self.budgets[name].probes))
            probe_tokens.add(labels, float(self.budgets[name].spent))
            share.add(labels, self.probe_share(name, now))
            for source in SOURCES:
                readings.add(dict(labels, source=source), float(self.sources[name].get(source, 0)))
        decisions = unit_metrics.Family("cpuinfer_slo_controller_decisions_total", "counter", "Decisions by action.")
        for action in ("hold", "grow", "cut", "safe"):
            decisions.add({"slice": slice_name, "action": action}, float(self.decisions.get(action, 0)))
        return families + per_unit + [decisions]


def run(config, controller, sleep=time.sleep, clock=time.monotonic):
    controller.start()
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
    except SystemExit:
        controller.keep_for_restart()
        raise
    finally:
        controller.restore("the controller is exiting")
    return 0


if __name__ == "__main__":
    sys.exit(main())
