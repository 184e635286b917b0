# -*- coding: utf-8 -*-
# Copyright: cpuinfer.llm contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Filters that turn host_facts topology into thread counts and CPU plans.

The code of the cpus filters (plugins/filter/cpus.py names them)."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import re

from ansible.errors import AnsibleFilterError
from ansible.module_utils.six.moves.collections_abc import Mapping
from ansible_collections.cpuinfer.llm.plugins.module_utils._cpulist import CpuListError, format_cpulist, parse_cpulist
from ansible_collections.cpuinfer.llm.plugins.module_utils._decimal import is_decimal


def whole_number(value, what):
    """What an argument spec of type int accepts, as an int: a number, or its text as '-e NAME=2'
    gives it (extra vars from the command line are strings)."""
    if isinstance(value, bool) or not (isinstance(value, int) or is_decimal(str(value).strip())):
        raise AnsibleFilterError("%s must be a whole number, not %r" % (what, value))
    return int(str(value).strip())


def inference_threads(core_cpus, allowed_cpus="", cpu_quota=0):
    quota = whole_number(cpu_quota or 0, "inference_threads: cpu_quota")
    try:
        cores = [parse_cpulist(core) for core in core_cpus]
        allowed = parse_cpulist(allowed_cpus) if allowed_cpus else set().union(*cores) if cores else set()
    except CpuListError as exc:
        raise AnsibleFilterError("inference_threads: %s" % exc)
    owned = sum(1 for core in cores if core & allowed)
    if quota:
        owned = min(owned, -(-quota // 100))
    return max(owned, 1)


def cpu_plan(facts, housekeeping_cores=1):
    """Split a host (host_facts) into housekeeping and inference CPUs by whole physical cores.

    Housekeeping takes the first cores of the first NUMA node; inference gets the rest, also listed
    per NUMA node and per L3 domain so an instance can stay inside one node or one L3 (Kunpeng
    dies, Xeon sockets). A host with no more cores than housekeeping needs is not split.
    """
    housekeeping_cores = whole_number(housekeeping_cores, "cpu_plan: housekeeping_cores")
    if housekeeping_cores < 1:
        raise AnsibleFilterError("cpu_plan: housekeeping_cores must be at least 1, not %d" % housekeeping_cores)
    try:
        cores = sorted((parse_cpulist(c) for c in facts["core_cpus"]), key=min)
        nodes = [(n["id"], parse_cpulist(n["cpus"])) for n in facts["numa_nodes"]]
        l3_domains = [parse_cpulist(d) for d in facts.get("l3_domains", [])]
    except (CpuListError, KeyError, TypeError) as exc:
        raise AnsibleFilterError("cpu_plan needs ansible_facts.cpuinfer from cpuinfer.llm.host_facts: %s" % exc)
    everything = set().union(*cores) if cores else set()
    if len(cores) <= housekeeping_cores:
        return {"split": False, "housekeeping": format_cpulist(everything), "inference": format_cpulist(everything),
                "inference_by_node": [{"node": n, "cpus": format_cpulist(c & everything)} for n, c in nodes if c & everything],
                "inference_by_l3": [format_cpulist(d) for d in l3_domains]}
    first_node = nodes[0][1] if nodes else everything
    ordered = [c for c in cores if c & first_node] + [c for c in cores if not c & first_node]
    housekeeping = set().union(*ordered[:housekeeping_cores])
    inference = everything - housekeeping
    return {
        "split": True,
        "housekeeping": format_cpulist(housekeeping),
        "inference": format_cpulist(inference),
        "inference_by_node": [{"node": n, "cpus": format_cpulist(c & inference)} for n, c in nodes if c & inference],
        "inference_by_l3": [format_cpulist(d & inference) for d in l3_domains if d & inference],
    }


def fact_groups(facts):
    """Inventory groups a host belongs to by its facts: cpuinfer_<platform> and cpuinfer_<build class>,
    in Ansible's group name alphabet (letters, digits, underscores)."""
    if not isinstance(facts, Mapping) or "platform" not in facts:
        raise AnsibleFilterError("fact_groups needs ansible_facts.cpuinfer from cpuinfer.llm.host_facts")
    names = [facts["platform"], facts.get("llama_build_class") or "no_build_class"]
    return ["cpuinfer_" + re.sub(r"[^a-z0-9]+", "_", str(name).lower()).strip("_") for name in names]


# The first systemd that knows CPUWeight=idle; it also writes cpu.idle (0 for any other weight) each
# time it applies a unit's cpu settings: at daemon-reload and at every set-property.
SYSTEMD_CPU_WEIGHT_IDLE = 252


def besteffort_cpu_weight(facts):
    """The slice's CPUWeight=: 'idle' where systemd sets cpu.idle itself and the kernel has it, else 1
    (the lowest weight; a oneshot and the SLO controller add cpu.idle where the kernel has it, and an
    older systemd leaves it alone)."""
    if not isinstance(facts, Mapping) or "cgroup" not in facts or "runtime" not in facts:
        raise AnsibleFilterError("besteffort_cpu_weight needs ansible_facts.cpuinfer from cpuinfer.llm.host_facts")
    systemd = facts["runtime"].get("systemd")
    if facts["cgroup"].get("cpu_idle") and systemd is not None and systemd >= SYSTEMD_CPU_WEIGHT_IDLE:
        return "idle"
    return 1
