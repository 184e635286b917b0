"""cpuinfer-slo-governor: keep one inference unit's p99 inter-token latency near its SLO by moving
the unit's CPU quota (systemd CPUQuota, i.e. cpu.max) within bounds.

Rule, per decision: p99 above 1.2 x SLO -> raise in proportion to p99/SLO, at most +30 % a step;
p99 below 0.8 x SLO -> lower 5 %; in between -> hold (the band is the hysteresis). After a change the
latency window starts empty, so the next decision sees only the new quota, and no change comes
sooner than the minimum interval. Every change (or, in dry-run, every change it would make) is
logged with before, after and the reason: to the journal and as a JSON line to the decision log.
The latency comes from the governor's own probe: a short streamed completion on 127.0.0.1.

Usage: cpuinfer-slo-governor CONFIG_JSON
"""

import collections
import json
import logging
import math
import os
import re
import subprocess
import sys
import time

from cpuinfer_agent import stream_probe, unit_metrics

LOG = logging.getLogger("cpuinfer-slo-governor")
RAISE_ABOVE, LOWER_BELOW = 1.2, 0.8
MAX_RAISE, LOWER_STEP = 0.30, 0.05
_TIMESPAN = re.compile(r"^([0-9.]+)(us|ms|s|min)$")
_USEC = {"us": 1, "ms": 1000, "s": 1000000, "min": 60000000}


def decide(p99_ms, slo_ms, quota, quota_min, quota_max):
    """(new quota percent, reason); new == quota means hold."""
    if p99_ms > RAISE_ABOVE * slo_ms:
        wanted = min(quota * p99_ms / slo_ms, quota * (1 + MAX_RAISE), quota_max)
        new = max(quota, min(int(math.ceil(wanted)), quota_max))
        if new == quota:
            return quota, "p99 %.0f ms > %.1f x SLO %.0f ms, but the quota is at its upper bound %d %%" % (
                p99_ms, RAISE_ABOVE, slo_ms, quota_max)
        return new, "p99 %.0f ms > %.1f x SLO %.0f ms: raise %d%% -> %d%% (x%.2f, at most +%d %% a step)" % (
            p99_ms, RAISE_ABOVE, slo_ms, quota, new, p99_ms / slo_ms, MAX_RAISE * 100)
    if p99_ms < LOWER_BELOW * slo_ms:
        new = max(quota_min, int(math.floor(quota * (1 - LOWER_STEP))))
        if new == quota:
            return quota, "p99 %.0f ms < %.1f x SLO, but the quota is at its lower bound %d %%" % (
                p99_ms, LOWER_BELOW, quota_min)
        return new, "p99 %.0f ms < %.1f x SLO %.0f ms: lower %d%% -> %d%% (-5 %%)" % (
            p99_ms, LOWER_BELOW, slo_ms, quota, new)
    return quota, "p99 %.0f ms within %.1f..%.1f x SLO %.0f ms: hold" % (p99_ms, LOWER_BELOW, RAISE_ABOVE, slo_ms)


def parse_quota(text):
    """systemctl show's CPUQuotaPerSecUSec ('400ms', '1.500000s', 'infinity') -> percent or None."""
    text = text.strip()
    if text in ("", "infinity"):
        return None
    match = _TIMESPAN.match(text)
    if not match:
        raise ValueError("unexpected CPUQuotaPerSecUSec: %r" % text)
    return int(round(float(match.group(1)) * _USEC[match.group(2)] / 10000.0))


class Systemd:
    """The unit's quota through systemd, so systemd's view and cpu.max never disagree."""

    def __init__(self, unit):
        self.unit = unit

    def quota(self):
        out = subprocess.run(["systemctl", "show", "--property=CPUQuotaPerSecUSec", "--value", self.unit],
                             capture_output=True, text=True, check=True).stdout
        return parse_quota(out)

    def set_quota(self, percent):
        # --runtime: a reboot or restart of the governor starts again from the unit's configured quota
        subprocess.run(["systemctl", "set-property", "--runtime", self.unit, "CPUQuota=%d%%" % percent], check=True)


class Governor:
    def __init__(self, config, systemd, clock=time.monotonic, wall=time.time):
        self.config, self.systemd, self.clock, self.wall = config, systemd, clock, wall
        self.gaps = collections.deque(maxlen=config["window_gaps"])
        self.last_change = -float("inf")
        self.changes = 0
        configured = systemd.quota()
        self.quota = configured if configured is not None else config["quota_max_percent"]
        self.last_p99 = None

    def observe(self, gaps_ms):
        self.gaps.extend(gaps_ms)

    def step(self):
        """One decision when the window is full and the minimum interval has passed; the record or None."""
        if len(self.gaps) < self.gaps.maxlen:
            return None
        now = self.clock()
        if now - self.last_change < self.config["min_change_interval_seconds"]:
            return None
        p99 = stream_probe.percentile(self.gaps, 0.99)
        self.last_p99 = p99
        new, reason = decide(p99, self.config["slo_p99_ms"], self.quota, self.config["quota_min_percent"],
                             self.config["quota_max_percent"])
        if new == self.quota:
            LOG.debug(reason)
            return None
        record = {"time": round(self.wall(), 3), "unit": self.systemd.unit, "p99_ms": round(p99, 1),
                  "slo_ms": self.config["slo_p99_ms"], "before_percent": self.quota, "after_percent": new,
                  "reason": reason, "dry_run": self.config["dry_run"]}
        if not self.config["dry_run"]:
            self.systemd.set_quota(new)
            self.quota = new
        self.changes += 1
        self.last_change = now
        self.gaps.clear()
        LOG.info("%s%s", "dry run, not applied: " if self.config["dry_run"] else "", reason)
        return record

    def families(self):
        unit = self.systemd.unit
        rows = [("cpu_quota_ratio", "gauge", "CPU quota the governor holds (1 = one CPU).", self.quota / 100.0),
                ("slo_seconds", "gauge", "The p99 inter-token latency objective.", self.config["slo_p99_ms"] / 1000.0),
                ("changes_total", "counter", "Quota changes made (or proposed in dry-run).", self.changes)]
        if self.last_p99 is not None:
            rows.append(("p99_seconds", "gauge", "p99 inter-token latency at the last decision.", self.last_p99 / 1000.0))
        families = []
        for name, kind, help_text, value in rows:
            family = unit_metrics.Family("cpuinfer_slo_governor_" + name, kind, help_text)
            family.add({"unit": unit}, float(value))
            families.append(family)
        return families

    def prometheus_text(self):
        return unit_metrics.render(self.families())


def run(config):
    governor = Governor(config, Systemd(config["unit"]))
    api_key = os.environ.get("CPUINFER_SLO_API_KEY", "")
    LOG.info("governing %s: SLO p99 %s ms, quota %d%% within %d..%d%%%s", config["unit"], config["slo_p99_ms"],
             governor.quota, config["quota_min_percent"], config["quota_max_percent"],
             " (dry run)" if config["dry_run"] else "")
    while True:
        try:
            governor.observe(stream_probe.measure(config["port"], config["probe_tokens"], api_key)["gaps_ms"])
        except (OSError, ValueError, IndexError) as exc:
            LOG.warning("probe on 127.0.0.1:%s failed: %s", config["port"], exc)
        record = governor.step()
        if record:
            with open(config["decision_log"], "a", encoding="utf-8") as log:
                log.write(json.dumps(record) + "\n")
        if config.get("textfile"):
            unit_metrics.write_textfile(config["textfile"], governor.families())
        time.sleep(config["probe_interval_seconds"])


def main(argv=None):
    argv = sys.argv if argv is None else argv
    logging.basicConfig(level=logging.INFO, format="%(message)s", stream=sys.stderr)
    with open(argv[1], encoding="utf-8") as handle:
        run(json.load(handle))


if __name__ == "__main__":
    sys.exit(main())
