# -*- coding: utf-8 -*-
# Copyright: cpuinfer.llm contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Per-unit metrics of inference services, as prometheus_client metric families.

The exporter's model: what a unit's cgroup, threads, resctrl group and counters say, read through the
collection's kernel helpers (_cgroupfs, _sched, _resctrl, _perf), so it runs on a temporary tree in
units; llama-server's own /metrics, parsed by prometheus_client and renamed; the probe's latency
histogram. prometheus_client writes the text format and the textfile. Names follow Prometheus
conventions: base units (seconds, bytes), counters end in _total, ratios are 0..1.
"""

import re

from prometheus_client import CollectorRegistry, generate_latest, write_to_textfile
from prometheus_client.core import Metric
from prometheus_client.parser import text_string_to_metric_families
from prometheus_client.utils import floatToGoString

from ansible_collections.cpuinfer.llm.plugins.module_utils import _cgroupfs, _resctrl, _sched

PREFIX = "cpuinfer_unit_"
# Upper bounds (seconds) of the inter-token latency histogram: 5 ms on real CPUs .. 10 s in the lab.
LATENCY_BUCKETS = (0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0)
MEMORY_EVENTS = ("low", "high", "max", "oom", "oom_kill")


class Family(Metric):
    """One metric family (prometheus_client's Metric) whose samples are named by the family's full
    name plus a suffix (_bucket, _sum, _count for a histogram); full_name keeps a counter's _total."""

    def __init__(self, name, kind, help_text):
        # the text format names a counter family by its base name plus _total, as its samples are named
        counter_base = kind == "counter" and name.endswith("_total")
        super().__init__(name[:-len("_total")] if counter_base else name, help_text, kind)
        self.full_name, self.kind = name, kind

    def add(self, labels, value, suffix=""):
        self.add_sample(self.full_name + suffix, dict((k, str(v)) for k, v in labels.items()),
                        float("nan") if value is None else value)


class _Snapshot:
    """A collector of families already read: the registry asks, they answer (empty ones left out)."""

    def __init__(self, families):
        self.families = [family for family in families if family.samples]

    def collect(self):
        return self.families


def registry_of(families):
    registry = CollectorRegistry(auto_describe=False)
    registry.register(_Snapshot(families))
    return registry


def render(families):
    """Families -> text format; families without samples are left out (absent, not zero)."""
    return generate_latest(registry_of(families)).decode("utf-8")


def write_textfile(path, families):
    """Replace path whole (written beside it, renamed over it), for node_exporter's textfile collector."""
    write_to_textfile(path, registry_of(families))


def _limit(text):
    """memory.high/max: 'max' means no limit (+Inf), else bytes."""
    text = (text or "").strip()
    if not text:
        return None
    return float("inf") if text == "max" else int(text)


class UnitMetrics:
    """The families for every unit; collect() adds one unit's readings to them."""

    # attribute, metric name (after the prefix), kind, help: one family per line
    FAMILIES = """
pressure_ratio pressure_avg_ratio gauge PSI: share of time tasks of the unit stalled on the resource, averaged over the window.
pressure_seconds pressure_stalled_seconds_total counter PSI: total time tasks of the unit stalled on the resource.
cpu_usage cpu_usage_seconds_total counter CPU time used by the unit (cpu.stat usage_usec).
cpu_periods cpu_periods_total counter Enforcement periods of the unit's CPU quota.
cpu_throttled_periods cpu_throttled_periods_total counter Periods in which the unit was throttled by its CPU quota.
cpu_throttled cpu_throttled_seconds_total counter Time the unit spent throttled.
memory_current memory_current_bytes gauge Memory charged to the unit.
memory_high memory_high_bytes gauge The unit's memory.high (+Inf: no limit).
memory_max memory_max_bytes gauge The unit's memory.max (+Inf: no limit).
memory_events memory_events_total counter memory.events of the unit, by event.
run_delay run_delay_seconds gauge Time the unit's live threads waited runnable for a CPU (schedstat), summed.
threads threads gauge Threads of the unit's processes.
llc_occupancy llc_occupancy_bytes gauge resctrl: last-level cache the unit occupies.
mbm_bytes memory_bandwidth_bytes_total counter resctrl: bytes moved to and from memory by the unit, by scope.
perf_available perf_counters_available gauge 1 when hardware counters of the unit can be read, 0 when not (see reason).
instructions instructions_total counter Instructions retired by the unit's tasks.
cache_misses cache_misses_total counter Cache misses of the unit's tasks.
pressure_events memory_pressure_events_total counter PSI trigger events: memory stalls above the configured threshold in a window.
"""

    def __init__(self):
        for line in self.FAMILIES.strip().splitlines():
            attribute, name, kind, help_text = line.split(" ", 3)
            setattr(self, attribute, Family(PREFIX + name, kind, help_text))

    def families(self):
        return [value for value in vars(self).values() if isinstance(value, Family)]

    def collect(self, root, unit, resctrl_group=None, perf=None, pressure_events=None):
        """Read one unit; missing files (controller off, no RDT) leave their metrics absent."""
        group = _cgroupfs.unit_group(root, unit)
        if group is None:
            return False
        labels = {"unit": unit}
        for resource in ("cpu", "memory", "io"):
            parsed = _cgroupfs.parse_pressure(_cgroupfs.read_file(root, group, resource + ".pressure"))
            for kind, values in sorted(parsed.items()):
                for window in ("avg10", "avg60"):
                    if window in values:
                        self.pressure_ratio.add(dict(labels, resource=resource, kind=kind, window=window[3:] + "s"),
                                                values[window] / 100.0)
                if "total" in values:
                    self.pressure_seconds.add(dict(labels, resource=resource, kind=kind), values["total"] / 1e6)
        cpu_stat = _cgroupfs.parse_flat_keyed(_cgroupfs.read_file(root, group, "cpu.stat"))
        for family, key, scale in ((self.cpu_usage, "usage_usec", 1e6), (self.cpu_periods, "nr_periods", 1),
                                   (self.cpu_throttled_periods, "nr_throttled", 1),
                                   (self.cpu_throttled, "throttled_usec", 1e6)):
            if key in cpu_stat:
                family.add(labels, cpu_stat[key] / scale if scale != 1 else cpu_stat[key])
        current = _cgroupfs.read_file(root, group, "memory.current")
        if current:
            self.memory_current.add(labels, int(current))
        for family, name in ((self.memory_high, "memory.high"), (self.memory_max, "memory.max")):
            value = _limit(_cgroupfs.read_file(root, group, name))
            if value is not None:
                family.add(labels, value)
        events = _cgroupfs.parse_flat_keyed(_cgroupfs.read_file(root, group, "memory.events"))
        for event in MEMORY_EVENTS:
            if event in events:
                self.memory_events.add(dict(labels, event=event), events[event])
        delay_ns, threads = _sched.run_delay(root, _cgroupfs.group_pids(root, group))
        self.run_delay.add(labels, delay_ns / 1e9)
        self.threads.add(labels, threads)
        if resctrl_group:
            readings = _resctrl.mon_readings(root, resctrl_group)
            if "llc_occupancy" in readings:
                self.llc_occupancy.add(labels, readings["llc_occupancy"])
            for event, scope in (("mbm_total_bytes", "total"), ("mbm_local_bytes", "local")):
                if event in readings:
                    self.mbm_bytes.add(dict(labels, scope=scope), readings[event])
        if perf is not None:
            counts, reason = perf
            self.perf_available.add(dict(labels, reason=reason or ""), 0 if counts is None else 1)
            for family, event in ((self.instructions, "instructions"), (self.cache_misses, "cache_misses")):
                if counts and event in counts:
                    family.add(labels, counts[event])
        if pressure_events is not None:
            self.pressure_events.add(labels, pressure_events)
        return True


class LatencyHistogram:
    """Cumulative histogram of inter-token gaps (seconds) plus the last probe's rate."""

    def __init__(self, buckets=LATENCY_BUCKETS):
        self.buckets = tuple(buckets)
        self.counts = {}
        self.sums = {}
        self.rates = {}

    def observe(self, unit, gaps_seconds, tokens_per_second):
        counts = self.counts.setdefault(unit, [0] * (len(self.buckets) + 1))
        for gap in gaps_seconds:
            index = next((i for i, bound in enumerate(self.buckets) if gap <= bound), len(self.buckets))
            counts[index] += 1
            self.sums[unit] = self.sums.get(unit, 0.0) + gap
        self.rates[unit] = tokens_per_second

    def families(self):
        histogram = Family("cpuinfer_inter_token_latency_seconds", "histogram",
                           "Gaps between streamed tokens of the probe's completions.")
        rate = Family("cpuinfer_probe_tokens_per_second", "gauge",
                      "End-to-end generation rate of the last probe completion.")
        for unit in sorted(self.counts):
            running = 0
            for bound, count in zip(self.buckets + (float("inf"),), self.counts[unit]):
                running += count
                histogram.add({"unit": unit, "le": floatToGoString(bound)}, running, "_bucket")
            histogram.add({"unit": unit}, self.sums.get(unit, 0.0), "_sum")
            histogram.add({"unit": unit}, running, "_count")
            rate.add({"unit": unit}, self.rates[unit])
        return [histogram, rate]


ENGINE_PREFIX = "cpuinfer_engine_"
ENGINE_NAMESPACE = "llamacpp:"
# Engines that are llama.cpp's HTTP server (mainline's and ik_llama.cpp's): /health, and /metrics in the
# namespace above (ik_llama.cpp lacks n_decode_total, n_busy_slots_per_decode, n_tokens_max and the
# speculative-decoding counters; it adds kv_cache_usage_ratio and kv_cache_tokens).
SERVER_ENGINES = ("llama-server", "ik_llama.cpp")


def engine_families(families, unit, text):
    """Add llama-server's /metrics of one unit to families ({name: Family}), renamed: colons are
    for recording rules, so 'llamacpp:prompt_tokens_total' becomes 'cpuinfer_engine_prompt_tokens_total',
    labelled with the unit. Families are shared by name across units (one HELP/TYPE each)."""
    for parsed in text_string_to_metric_families(text):
        kind = parsed.type if parsed.type in ("counter", "gauge") else "unknown"
        # the parser names every counter sample *_total; one the server exposed without it (n_tokens_max,
        # a high-water mark typed counter) is no counter: a gauge under the server's own name
        high_water = kind == "counter" and not re.search(r"^%s_total[{ ]" % re.escape(parsed.name), text, re.M)
        for sample in parsed.samples:
            if not sample.name.startswith(ENGINE_NAMESPACE):
                continue
            name = parsed.name if high_water else sample.name
            renamed = ENGINE_PREFIX + name[len(ENGINE_NAMESPACE):]
            family = families.setdefault(renamed, Family(renamed, "gauge" if high_water else kind,
                                                         parsed.documentation or "llama-server's " + name))
            family.add(dict(sample.labels, unit=unit), sample.value)
    return families
