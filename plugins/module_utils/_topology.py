# -*- coding: utf-8 -*-
# Copyright: cpuinfer.llm contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""CPU topology from procfs and sysfs: /proc/cpuinfo, online CPUs, packages, cores, caches,
NUMA nodes, and the ARM MIDR register."""

from __future__ import absolute_import, division, print_function

import os
import re

from ansible_collections.cpuinfer.llm.plugins.module_utils._cpulist import format_cpulist, parse_cpulist
from ansible_collections.cpuinfer.llm.plugins.module_utils._decimal import is_decimal, is_signed_decimal
from ansible_collections.cpuinfer.llm.plugins.module_utils._errors import HostError
from ansible_collections.cpuinfer.llm.plugins.module_utils._knobs import knob_exists, knob_path, read_knob
from ansible_collections.cpuinfer.llm.plugins.module_utils._sizes import parse_size

__metaclass__ = type

CPU_DIR = "/sys/devices/system/cpu"
NODE_DIR = "/sys/devices/system/node"
_NUMBERED = re.compile(r"^(cpu|node|index)([0-9]+)\Z")
_HEX = re.compile(r"^(0x)?[0-9a-fA-F]+\Z")


class TopologyError(HostError):
    """procfs or sysfs shows something no kernel writes: garbage, or files that contradict each other."""


def _not_a_number(relative, text):
    return TopologyError("%s holds %r, not a number: this host's sysfs is not what the kernel writes" % (relative, text))


def _numbered_entries(root, relative, prefix):
    path = knob_path(root, relative)
    if not os.path.isdir(path):
        return []
    numbers = []
    for name in os.listdir(path):
        match = _NUMBERED.match(name)
        if match and match.group(1) == prefix:
            numbers.append(int(match.group(2)))
    return sorted(numbers)


def read_cpuinfo(root):
    """/proc/cpuinfo as (common, per_cpu): common holds keys outside any processor block (ARM's
    'Features' on some kernels); per_cpu is a list of dicts, one per 'processor' block."""
    text = read_knob(root, "/proc/cpuinfo")
    common, per_cpu, block = {}, [], None
    for line in text.splitlines():
        if ":" not in line:
            block = None
            continue
        key, value = [part.strip() for part in line.split(":", 1)]
        if key == "processor":
            block = {"processor": value}
            per_cpu.append(block)
        elif block is not None:
            block[key] = value
        else:
            common[key] = value
    return common, per_cpu


def online_cpus(root):
    if knob_exists(root, CPU_DIR + "/online"):
        return parse_cpulist(read_knob(root, CPU_DIR + "/online"))
    return set(_numbered_entries(root, CPU_DIR, "cpu"))


def check_consistent(root, cpus):
    """Every online CPU has its sysfs directory; the CPU count of a host is not a guess."""
    present = set(_numbered_entries(root, CPU_DIR, "cpu"))
    missing = set(cpus) - present
    if missing:
        raise TopologyError("sysfs is inconsistent: %s/online lists CPUs %s, but there is no directory for them "
                            "(directories: %s)" % (CPU_DIR, format_cpulist(missing), format_cpulist(present) or "none"))


def _cpu_knob(root, cpu, name):
    relative = "%s/cpu%d/%s" % (CPU_DIR, cpu, name)
    return read_knob(root, relative) if knob_exists(root, relative) else None


def _package_ids(root, cpus):
    """{cpu: package id}; {} when no CPU has a physical_package_id (some ARM firmware describes none)."""
    ids = {}
    for cpu in cpus:
        text = _cpu_knob(root, cpu, "topology/physical_package_id")
        if text is not None:
            if not is_signed_decimal(text):
                raise _not_a_number("%s/cpu%d/topology/physical_package_id" % (CPU_DIR, cpu), text)
            ids[cpu] = int(text)
    missing = set(cpus) - set(ids)
    if ids and missing:
        raise TopologyError("sysfs is inconsistent: CPUs %s have no topology/physical_package_id while CPUs %s do"
                            % (format_cpulist(missing), format_cpulist(ids)))
    return ids


def packages_and_cores(root, cpus):
    """(sockets, physical_cores): distinct package ids and distinct (package, core) pairs; a host
    whose firmware names no package counts as one socket."""
    ids = _package_ids(root, cpus)
    cores = set()
    for cpu in cpus:
        core = _cpu_knob(root, cpu, "topology/core_id")
        cores.add((ids.get(cpu), core if core is not None else cpu))
    return max(len(set(ids.values())), 1), len(cores)


def thread_siblings(root, cpus):
    """Groups of logical CPUs that share one physical core."""
    groups = set()
    for cpu in cpus:
        siblings = _cpu_knob(root, cpu, "topology/thread_siblings_list")
        groups.add(format_cpulist(parse_cpulist(siblings) if siblings else {cpu}))
    return sorted(groups, key=lambda text: min(parse_cpulist(text)))


def caches(root, cpus):
    """Distinct caches: [{level, type, size_bytes, cpus}], one entry per physical cache instance."""
    seen = {}
    for cpu in cpus:
        base = "%s/cpu%d/cache" % (CPU_DIR, cpu)
        for index in _numbered_entries(root, base, "index"):
            relative = "%s/index%d/" % (base, index)
            level = read_knob(root, relative + "level")
            if not is_decimal(level):
                raise _not_a_number(relative + "level", level)
            kind = read_knob(root, relative + "type")
            shared = _optional(root, relative + "shared_cpu_list") or str(cpu)
            size = _optional(root, relative + "size")
            key = (level, kind, format_cpulist(parse_cpulist(shared)))
            if key not in seen:
                seen[key] = {
                    "level": int(level),
                    "type": kind,
                    "size_bytes": parse_size(size) if size else None,
                    "cpus": key[2],
                }
    return sorted(seen.values(), key=lambda c: (c["level"], c["type"], min(parse_cpulist(c["cpus"]))))


def _optional(root, relative):
    return read_knob(root, relative) if knob_exists(root, relative) else None


def numa_nodes(root):
    nodes = []
    for node in _numbered_entries(root, NODE_DIR, "node"):
        cpulist = _optional(root, "%s/node%d/cpulist" % (NODE_DIR, node)) or ""
        nodes.append({"id": node, "cpus": format_cpulist(parse_cpulist(cpulist))})
    return nodes


def midr(root, cpus):
    """ARM MIDR_EL1 of the first online CPU as an int, or None (x86, or not exposed)."""
    for cpu in sorted(cpus):
        value = _cpu_knob(root, cpu, "regs/identification/midr_el1")
        if value:
            if not _HEX.match(value):
                raise _not_a_number("%s/cpu%d/regs/identification/midr_el1" % (CPU_DIR, cpu), value)
            return int(value, 16)
    return None


def cpufreq_governor(root, cpus):
    """The cpufreq governor of the first online CPU, or None where the host has no cpufreq (VMs)."""
    if not cpus:
        return None
    return _optional(root, "%s/cpu%d/cpufreq/scaling_governor" % (CPU_DIR, min(cpus))) or None


def online_nodes(root):
    """Online NUMA nodes; a kernel without NUMA has just node 0."""
    if knob_exists(root, NODE_DIR + "/online"):
        return parse_cpulist(read_knob(root, NODE_DIR + "/online"))
    return set(_numbered_entries(root, NODE_DIR, "node")) or {0}


def isolated_cpus(root):
    """{'nohz_full': CPU list, 'isolated': CPU list} as the running kernel keeps them ('' for none; nohz_full
    None where the kernel was built without NO_HZ_FULL). The kernel prints an unset nohz_full mask as '(null)'."""
    found = {}
    for name in ("nohz_full", "isolated"):
        text = _optional(root, "%s/%s" % (CPU_DIR, name))
        if text is not None:
            text = "" if text == "(null)" else format_cpulist(parse_cpulist(text))
        found[name] = text
    return found


def cpuidle_driver(root):
    """The cpuidle driver ('intel_idle', 'acpi_idle', 'psci_idle', 'haltpoll'), or None where the host has
    none (a VM under emulation): there no C-state exists whose exit latency a limit could bound."""
    driver = _optional(root, CPU_DIR + "/cpuidle/current_driver")
    return driver if driver and driver != "none" else None


def cpufreq_epp(root, cpus):
    """The energy/performance preference of the first online CPU, or None where the cpufreq driver has none
    (intel_pstate and amd-pstate in active mode have one; acpi-cpufreq and VMs not)."""
    if not cpus:
        return None
    return _optional(root, "%s/cpu%d/cpufreq/energy_performance_preference" % (CPU_DIR, min(cpus))) or None
