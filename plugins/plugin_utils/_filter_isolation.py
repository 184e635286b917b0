# -*- coding: utf-8 -*-
# Copyright: cpuinfer.llm contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The kernel isolation a CPU plan asks for: command line arguments and the workqueue CPU mask.

The code of the isolation filters (plugins/filter/isolation.py names them)."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

from ansible.errors import AnsibleFilterError
from ansible.module_utils.six.moves.collections_abc import Mapping
from ansible_collections.cpuinfer.llm.plugins.module_utils._cpulist import CpuListError, parse_cpulist

MODES = ("none", "nohz")
# isolcpus= flags the kernel knows (Documentation/admin-guide/kernel-parameters.txt)
ISOLCPUS_FLAGS = ("nohz", "domain", "managed_irq")


def isolation_cmdline(plan, mode="none", isolcpus_flags=None):
    """{argument: value} for cpuinfer.llm.kernel_cmdline. nohz: the scheduler tick (nohz_full, which also
    keeps unbound kernel threads and workqueues on housekeeping) and RCU callbacks (rcu_nocbs) off the
    inference CPUs, interrupts' default affinity (irqaffinity) on housekeeping; isolcpus only with flags
    given, since isolcpus=domain also takes the CPUs out of load balancing, which a cgroup cpuset cannot undo.
    A host the plan does not split (too few cores) gets nothing: it has no CPU to keep quiet."""
    if mode not in MODES:
        raise AnsibleFilterError("isolation_cmdline: mode must be one of %s, not %r" % (", ".join(MODES), mode))
    if not isinstance(plan, Mapping) or "split" not in plan:
        raise AnsibleFilterError("isolation_cmdline needs a CPU plan (cpuinfer.llm.cpu_plan)")
    flags = list(isolcpus_flags or [])
    unknown = [flag for flag in flags if flag not in ISOLCPUS_FLAGS]
    if unknown:
        raise AnsibleFilterError("isolation_cmdline: isolcpus flags %s unknown; the kernel knows %s"
                                 % (", ".join(map(str, unknown)), ", ".join(ISOLCPUS_FLAGS)))
    if mode == "none" or not plan["split"]:
        return {}
    inference, housekeeping = plan["inference"], plan["housekeeping"]
    args = {"nohz_full": inference, "rcu_nocbs": inference, "irqaffinity": housekeeping}
    if flags:
        args["isolcpus"] = ",".join(flags + [inference])
    return args


def cpumask_hex(cpus):
    """'0-1,4' -> '13': the hexadecimal mask sysfs masks (workqueue cpumask) take, 32-bit groups
    comma-separated as the kernel prints them."""
    try:
        wanted = parse_cpulist(cpus)
    except CpuListError as exc:
        raise AnsibleFilterError("cpumask_hex: %s" % exc)
    if not wanted:
        raise AnsibleFilterError("cpumask_hex: an empty CPU list has no mask")
    mask = sum(1 << cpu for cpu in wanted)
    groups = []
    while mask:
        groups.append(mask & 0xFFFFFFFF)
        mask >>= 32
    groups.reverse()
    return ",".join(["%x" % groups[0]] + ["%08x" % group for group in groups[1:]])


def absent_knobs(facts, governor="", epp="", cpu_dma_latency_us=None, isolation="none"):
    """The latency knobs asked for that this host does not have, each with why (VMs have no cpufreq and
    no cpuidle driver): reported, not failed."""
    if not isinstance(facts, Mapping):
        raise AnsibleFilterError("absent_knobs needs ansible_facts.cpuinfer from cpuinfer.llm.host_facts")
    absent = []
    if governor and facts.get("cpufreq_governor") is None:
        absent.append("cpufreq governor %s: no cpufreq on this host (a VM, or no driver)" % governor)
    if epp and facts.get("cpufreq_epp") is None:
        absent.append("energy/performance preference %s: the cpufreq driver has none (intel_pstate or amd-pstate "
                      "in active mode have one)" % epp)
    if cpu_dma_latency_us is not None and facts.get("cpuidle_driver") is None:
        absent.append("idle-state exit latency <= %s us: no cpuidle driver (a VM): held, but it bounds nothing here"
                      % cpu_dma_latency_us)
    if isolation != "none" and (facts.get("isolation") or {}).get("nohz_full", "") is None:
        absent.append("isolation %s: the kernel was built without NO_HZ_FULL" % isolation)
    return absent
