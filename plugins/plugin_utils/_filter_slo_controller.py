# -*- coding: utf-8 -*-
# Copyright: cpuinfer.llm contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Filters of the slo_controller role: its configuration from the host's instances and CPU plan.

The code of the slo_controller filters (plugins/filter/slo_controller.py names them)."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

from ansible.errors import AnsibleFilterError
from ansible.module_utils.six.moves.collections_abc import Mapping
from ansible_collections.cpuinfer.llm.plugins.plugin_utils._filter_cpus import cpu_plan
from ansible_collections.cpuinfer.llm.plugins.module_utils._cpulist import CpuListError, format_cpulist, parse_cpulist


def _positive(options, key, problems, minimum=1):
    value = options.get(key)
    if isinstance(value, bool) or not isinstance(value, (int, float)) or value < minimum:
        problems.append("%s must be a number of at least %s, not %r" % (key, minimum, value))


def slo_controller_config(instances, facts, housekeeping_cores, options):
    """The controller's JSON configuration for one host; every problem refused at once."""
    if not isinstance(options, Mapping):
        raise AnsibleFilterError("slo_controller_config: options must be a dict")
    problems = []
    declared = [i for i in (instances or []) if isinstance(i, Mapping) and i.get("name")]
    latency_critical = [i for i in declared if not i.get("best_effort")]
    wanted = list(options.get("instances") or [])
    by_name = dict((i["name"], i) for i in latency_critical)
    for name in wanted:
        if name not in by_name:
            problems.append("slo_controller_instances names %r, which is not a latency-critical instance of "
                            "llama_server_instances (%s)" % (name, ", ".join(sorted(by_name)) or "none"))
    chosen = [by_name[n] for n in wanted if n in by_name] if wanted else latency_critical
    if not chosen:
        problems.append("no latency-critical llama_server instance to protect on this host")
    for key in ("slo_p99_ms", "window_seconds", "probe_interval_seconds", "probe_tokens"):
        _positive(options, key, problems)
    for key in ("ttft_slo_ms", "min_interval_seconds", "resume_seconds"):
        _positive(options, key, problems, minimum=0)
    _positive(options, "decode_tokens_per_second", problems, minimum=0.001)
    _positive(options, "tail_factor", problems, minimum=1)
    share = options.get("probe_budget_share")
    if isinstance(share, bool) or not isinstance(share, (int, float)) or not 0 < share <= 1:
        problems.append("probe_budget_share must be a share above 0 and at most 1, not %r" % (share,))
    _positive(options, "step_percent", problems)
    _positive(options, "safe_minimum_percent", problems)
    _positive(options, "psi_some_max", problems, minimum=0)
    if not isinstance(options.get("probe_tokens"), bool) and isinstance(options.get("probe_tokens"), int) \
            and options["probe_tokens"] < 2:
        problems.append("probe_tokens must be at least 2 (one inter-token gap), not %r" % options["probe_tokens"])
    plan = cpu_plan(facts, housekeeping_cores)
    try:
        base = parse_cpulist(plan["housekeeping"])
        inference = parse_cpulist(plan["inference"]) if plan["split"] else set()
        cores = [parse_cpulist(core) & inference for core in facts["core_cpus"]]
    except (CpuListError, KeyError) as exc:
        raise AnsibleFilterError("slo_controller_config needs ansible_facts.cpuinfer from host_facts: %s" % exc)
    # the last cores first: instances fill the inference CPUs from the first
    lendable = [format_cpulist(core) for core in sorted((c for c in cores if c), key=min, reverse=True)]
    minimum = options.get("safe_minimum_percent")
    if isinstance(minimum, int) and not isinstance(minimum, bool) and minimum > 100 * len(base):
        problems.append("safe_minimum_percent %d is more than best-effort work's own CPUs (%s) can use: at most %d"
                        % (minimum, format_cpulist(base), 100 * len(base)))
    if problems:
        raise AnsibleFilterError("slo_controller: " + "; ".join(problems))
    textfile_dir = options.get("textfile_dir") or ""
    return {
        "slice": options["slice"],
        "instances": [{"name": i["name"], "unit": "cpuinfer-llama-%s.service" % i["name"], "port": int(i["port"]),
                       "slo_p99_ms": options["slo_p99_ms"], "ttft_slo_ms": options["ttft_slo_ms"],
                       # what the probe budget is a share of: the class's decode rate in every slot
                       "token_capacity_per_second": options["decode_tokens_per_second"] * int(i.get("parallel", 1))}
                      for i in chosen],
        "min_percent": minimum,
        "step_percent": options["step_percent"],
        "base_cpus": format_cpulist(base),
        "lendable_cores": lendable if options.get("lend_cores", True) else [],
        "psi_some_max": options["psi_some_max"],
        "window_seconds": options["window_seconds"],
        "probe_interval_seconds": options["probe_interval_seconds"],
        "probe_tokens": options["probe_tokens"],
        "probe_budget_share": options["probe_budget_share"],
        "tail_factor": options["tail_factor"],
        "resume_seconds": options["resume_seconds"],
        "resume_file": "/var/log/cpuinfer/slo-controller.resume.json",
        "min_interval_seconds": options["min_interval_seconds"],
        "dry_run": bool(options.get("dry_run")),
        "decision_log": "/var/log/cpuinfer/slo-controller.jsonl",
        "textfile": (textfile_dir.rstrip("/") + "/cpuinfer-slo-controller.prom") if textfile_dir else "",
    }
