"""cpuinfer-metrics: per-unit metrics of inference services for node_exporter's textfile collector.

Every interval it reads each configured unit's cgroup (PSI, cpu.stat, memory), its threads'
run-delay, resctrl monitoring and hardware counters where the host has them, and rewrites one .prom
file atomically. Between writes it waits on PSI memory triggers ("some STALL WINDOW" written to the
unit's memory.pressure), so every pressure event is logged and counted, not sampled. A probe thread
streams a short completion now and then for tokens/s and the inter-token latency histogram.

Usage: cpuinfer-metrics CONFIG_JSON [--once]   (--once: one collection to stdout, no triggers)
"""

import json
import logging
import os
import select
import sys
import threading
import time
import urllib.error
import urllib.request

# The agent's wheel carries the collection's kernel helpers under their collection path.
from ansible_collections.cpuinfer.llm.plugins.module_utils import _cgroupfs, _perf
from cpuinfer_agent import stream_probe, unit_metrics

LOG = logging.getLogger("cpuinfer-metrics")


class Unit:
    """One watched unit: its cgroup (which changes on restart), trigger fd, counters, event count."""

    def __init__(self, spec):
        self.name = spec["unit"]
        self.port = spec.get("port")
        self.engine = spec.get("engine", "")
        self.resctrl_group = spec.get("resctrl_group")
        self.group = None
        self.inode = None
        self.trigger_fd = None
        self.counters = None
        self.perf_reason = "not tried"
        self.pressure_events = 0

    def refresh(self, root, config, watch=True):
        """Follow the unit's cgroup: a restart makes a new directory, and old fds watch nothing.
        watch=False opens no trigger (a one-shot collection has nothing to wait for)."""
        group = _cgroupfs.unit_group(root, self.name)
        inode = os.stat(os.path.join(root, "sys/fs/cgroup", group)).st_ino if group else None
        if (group, inode) == (self.group, self.inode):
            return
        self.close()
        self.group, self.inode = group, inode
        if group is None:
            return
        trigger = config["pressure_trigger"]
        try:
            if not watch:
                raise OSError("one-shot collection")
            self.trigger_fd = _cgroupfs.pressure_trigger(root, group, "memory", trigger["stall_us"],
                                                         trigger["window_us"])
        except OSError as exc:
            if watch:
                LOG.warning("%s: no memory pressure trigger (%s)", self.name, exc)
        if config.get("perf_counters"):
            try:
                self.counters = _perf.CgroupCounters(root, group).open()
                self.perf_reason = ""
            except (_perf.PerfError, OSError) as exc:
                self.perf_reason = str(exc)
        else:
            self.perf_reason = "disabled (metrics_perf_counters)"

    def perf(self):
        if self.counters is None:
            return None, self.perf_reason
        try:
            return self.counters.read(), ""
        except OSError as exc:
            return None, "reading counters failed: %s" % exc

    def close(self):
        if self.trigger_fd is not None:
            os.close(self.trigger_fd)
            self.trigger_fd = None
        if self.counters is not None:
            self.counters.close()
            self.counters = None


class Prober(threading.Thread):
    """Streams a short completion per unit every probe interval; feeds the latency histogram."""

    def __init__(self, units, probe, histogram, lock):
        super().__init__(daemon=True)
        self.units, self.probe, self.histogram, self.lock = units, probe, histogram, lock
        self.api_key = os.environ.get("CPUINFER_METRICS_API_KEY", "")

    def run(self):
        while True:
            for unit in self.units:
                if unit.port:
                    try:
                        result = stream_probe.measure(unit.port, self.probe["tokens"], self.api_key)
                    except (OSError, ValueError, IndexError) as exc:
                        LOG.warning("%s: probe on 127.0.0.1:%s failed: %s", unit.name, unit.port, exc)
                        continue
                    with self.lock:
                        self.histogram.observe(unit.name, [g / 1000.0 for g in result["gaps_ms"]],
                                               result["tokens_per_second"])
            time.sleep(self.probe["interval_seconds"])


def engine_metrics(units, api_key):
    """llama.cpp's server's own /metrics of each unit that runs it, renamed (an engine that does not
    answer is left out, not zero)."""
    families = {}
    for unit in units:
        if unit.engine not in unit_metrics.SERVER_ENGINES or not unit.port:
            continue
        request = urllib.request.Request("http://127.0.0.1:%d/metrics" % unit.port,
                                         headers={"Authorization": "Bearer " + api_key} if api_key else {})
        try:
            with urllib.request.urlopen(request, timeout=5) as response:
                unit_metrics.engine_families(families, unit.name, response.read().decode())
        except (urllib.error.URLError, OSError, ValueError) as exc:
            LOG.warning("%s: no engine metrics from 127.0.0.1:%s (%s)", unit.name, unit.port, exc)
    return list(families.values())


def families_now(root, units, histogram, lock):
    metrics = unit_metrics.UnitMetrics()
    for unit in units:
        metrics.collect(root, unit.name, resctrl_group=unit.resctrl_group, perf=unit.perf(),
                        pressure_events=unit.pressure_events if unit.trigger_fd is not None else None)
    engine = engine_metrics(units, os.environ.get("CPUINFER_METRICS_API_KEY", ""))
    with lock:
        return metrics.families() + engine + histogram.families()


def collect(root, units, histogram, lock):
    """One collection as text (the --once output)."""
    return unit_metrics.render(families_now(root, units, histogram, lock))


def wait_for_pressure(root, units, seconds):
    """Poll the trigger fds until the next collection is due; count and log each event."""
    deadline = time.monotonic() + seconds
    while True:
        left = deadline - time.monotonic()
        if left <= 0:
            return
        poller = select.poll()
        by_fd = {}
        for unit in units:
            if unit.trigger_fd is not None:
                poller.register(unit.trigger_fd, select.POLLPRI)
                by_fd[unit.trigger_fd] = unit
        if not by_fd:
            time.sleep(left)
            return
        for fd, events in poller.poll(left * 1000):
            unit = by_fd[fd]
            if events & (select.POLLERR | select.POLLNVAL):
                LOG.warning("%s: pressure trigger gone (unit restarted?), reopening", unit.name)
                unit.inode = None  # makes refresh() reopen it
                continue
            unit.pressure_events += 1
            pressure = _cgroupfs.parse_pressure(_cgroupfs.read_file(root, unit.group, "memory.pressure"))
            LOG.info("memory pressure event on %s (#%d): some avg10=%s full avg10=%s", unit.name,
                     unit.pressure_events, pressure.get("some", {}).get("avg10"),
                     pressure.get("full", {}).get("avg10"))


def main(argv=None):
    argv = sys.argv if argv is None else argv
    logging.basicConfig(level=logging.INFO, format="%(message)s", stream=sys.stderr)
    with open(argv[1], encoding="utf-8") as handle:
        config = json.load(handle)
    root = config.get("root", "/")
    units = [Unit(spec) for spec in config["units"]]
    histogram, lock = unit_metrics.LatencyHistogram(), threading.Lock()
    if "--once" in argv:
        for unit in units:
            unit.refresh(root, config, watch=False)
        sys.stdout.write(collect(root, units, histogram, lock))
        return 0
    if config["probe"]["interval_seconds"] > 0:
        Prober(units, config["probe"], histogram, lock).start()
    LOG.info("writing %s every %ss for %s", config["textfile"], config["interval_seconds"],
             ", ".join(u.name for u in units))
    while True:
        for unit in units:
            unit.refresh(root, config)
        unit_metrics.write_textfile(config["textfile"], families_now(root, units, histogram, lock))
        wait_for_pressure(root, units, config["interval_seconds"])


if __name__ == "__main__":
    sys.exit(main())
