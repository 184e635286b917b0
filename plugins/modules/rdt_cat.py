#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright: cpuinfer.llm contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import absolute_import, division, print_function

__metaclass__ = type

DOCUMENTATION = r"""
module: rdt_cat
short_description: Cache and memory-bandwidth allocation (Intel RDT CAT/CDP/MBA, AMD PQoS) through resctrl
version_added: 1.0.0
description:
  - Creates resctrl resource groups, writes their schemata (L3/L2 cache masks, CDP code/data masks,
    memory bandwidth), assigns CPUs and tasks, and reads monitoring data.
  - Everything is checked against the host's own C(/sys/fs/resctrl/info) before the first write
    (mask within C(cbm_mask), at least C(min_cbm_bits) bits, contiguous unless C(sparse_masks=1)
    as on AMD, bandwidth within C(min_bandwidth)..100 in C(bandwidth_gran) steps on Intel, domain
    ids that exist, CLOSIDs left). Overlaps with C(shareable_bits) or hardware bits are warned about.
  - Full schemata lines are written while an exclusive flock is held on the resctrl root (as pqos
    does); after each write C(info/last_cmd_status) is read and returned on failure, and what the
    run wrote is undone.
  - Hosts without RDT (ARM, where MPAM is not exposed through resctrl by mainline kernels yet, and
    virtual machines) get an error that says what is missing.
author: cpuinfer.llm maintainers (@cpuinfer)
options:
  name:
    description: The resource group; empty for the default group (which cannot be removed).
    type: str
    default: ""
  state:
    description: V(present), or V(absent) to remove the group (its tasks return to the default group).
    type: str
    choices: [present, absent]
    default: present
  schemata:
    description:
      - Resource name as resctrl names it (V(L3), V(L3CODE), V(L3DATA), V(L2), V(L2CODE), V(L2DATA),
        V(MB)) to one value for every domain, or to a dict of domain id to value.
      - Cache values are hex masks (V(0f00)); V(MB) is a percentage on Intel, the vendor's unit on
        AMD (1/8 GB/s), or MB/s when mounted with C(mba_MBps).
    type: dict
  cpus:
    description: CPUs whose default allocation is this group (C(cpus_list)); every one must be online.
    type: str
  pids:
    description: Tasks to assign to the group.
    type: list
    elements: int
  unit:
    description: A running systemd unit whose processes are assigned to the group.
    type: str
  monitor:
    description:
      - "Monitoring groups to create under the group, each name with the list of tasks it watches
        (tasks of this group), for example C({decode: [4242]})."
    type: dict
  mount:
    description:
      - Mount resctrl at C(/sys/fs/resctrl) when it is not mounted, with these options.
    type: dict
    suboptions:
      cdp:
        description: L3 code/data prioritisation.
        type: bool
        default: false
      cdpl2:
        description: L2 code/data prioritisation.
        type: bool
        default: false
      mba_MBps:
        description: Memory bandwidth in MB/s (the kernel's feedback loop) instead of percent.
        type: bool
        default: false
extends_documentation_fragment:
  - cpuinfer.llm.kernel
"""

EXAMPLES = r"""
- name: Split L3 between inference and everything else (Xeon, 12-way cache, 2 sockets)
  cpuinfer.llm.rdt_cat:
    name: inference
    schemata:
      L3: "ff0"
      MB: 100
    unit: llama-server@model-a.service
    mount: {}

- name: The rest gets the low ways and 50 % bandwidth on socket 1 only
  cpuinfer.llm.rdt_cat:
    name: ""
    schemata:
      L3: {"0": "00f", "1": "00f"}
      MB: {"1": 50}

- name: Watch one process's cache occupancy
  cpuinfer.llm.rdt_cat:
    name: inference
    monitor:
      server: ["{{ llama_pid }}"]
"""

RETURN = r"""
before:
  description: The group's schemata, cpus and task count before the run.
  returned: always
  type: dict
after:
  description: The same after the run (in check mode, what it would be).
  returned: always
  type: dict
monitoring:
  description: llc_occupancy / mbm_total_bytes / mbm_local_bytes summed over domains, for the group and each monitor group.
  returned: when the host has resctrl monitoring
  type: dict
last_cmd_status:
  description: The kernel's info/last_cmd_status after the last write.
  returned: when something was written
  type: str
"""

from ansible_collections.cpuinfer.llm.plugins.module_utils import _rdt_plan as plan
from ansible_collections.cpuinfer.llm.plugins.module_utils import _resctrl as resctrl
from ansible_collections.cpuinfer.llm.plugins.module_utils import _sched, _topology
from ansible_collections.cpuinfer.llm.plugins.module_utils._cgroupfs import unit_pids
from ansible_collections.cpuinfer.llm.plugins.module_utils._cpulist import CpuListError, format_cpulist, parse_cpulist
from ansible_collections.cpuinfer.llm.plugins.module_utils._rdt_apply import ResctrlWriter
from ansible_collections.cpuinfer.llm.plugins.module_utils._runner import Refused, Step, refuse_if, run_module

NO_RDT = (
    "this host has no RDT: resctrl is not in /proc/filesystems. Cache allocation needs an Intel CPU "
    "with RDT (CAT/CDP/MBA) or an AMD CPU with PQoS, and a kernel with CONFIG_X86_CPU_RESCTRL; "
    "ARM MPAM is not exposed through resctrl in mainline kernels yet, and virtual CPUs usually have none"
)
AMD_VENDORS = ("AuthenticAMD", "HygonGenuine")
ARGUMENT_SPEC = dict(
    name=dict(type="str", default=""),
    state=dict(type="str", choices=["present", "absent"], default="present"),
    schemata=dict(type="dict"),
    cpus=dict(type="str"),
    pids=dict(type="list", elements="int"),
    unit=dict(type="str"),
    monitor=dict(type="dict"),
    mount=dict(type="dict", options=dict(cdp=dict(type="bool", default=False), cdpl2=dict(type="bool", default=False),
                                         mba_MBps=dict(type="bool", default=False))),
    root=dict(type="path", default="/"),
)


def request_problems(params, root):
    """What is wrong with the request whatever resctrl shows, checked before it is mounted."""
    problems = []
    name = params["name"]
    if "/" in name or name in (".", "..") or name in resctrl.RESERVED_NAMES:
        problems.append("group name %r is not allowed (no '/', not %s)" % (name, ", ".join(resctrl.RESERVED_NAMES)))
    if params["state"] == "absent" and name == "":
        problems.append("the default group cannot be removed")
    if params["unit"] is not None and not params["unit"].strip():
        problems.append("unit must not be empty")
    plan.monitor_groups(params["monitor"], problems)
    if params["cpus"] is not None:
        try:
            cpus = parse_cpulist(params["cpus"])
        except CpuListError as exc:
            problems.append("cpus: %s" % exc)
        else:
            online = _topology.online_cpus(root)
            if cpus - online:
                problems.append("cpus %s are not online (online: %s)" % (format_cpulist(cpus - online), format_cpulist(online)))
    return problems


def mount_step(module, root):
    """The step that mounts resctrl, or None when it is mounted; Refused when it cannot be."""
    if resctrl.mount_options(root) is not None:
        return None
    if not resctrl.kernel_supports(root):
        raise Refused(NO_RDT)
    if module.params["mount"] is None:
        raise Refused("resctrl is not mounted at %s; give mount: {} to mount it" % resctrl.RESCTRL_MOUNT)
    options = [name for name in ("cdp", "cdpl2", "mba_MBps") if module.params["mount"][name]]
    target = root.rstrip("/") + resctrl.RESCTRL_MOUNT
    argv = ["mount", "-t", "resctrl"] + (["-o", ",".join(options)] if options else []) + ["resctrl", target]

    def command(args):
        rc, dummy, err = module.run_command(args)
        if rc != 0:
            raise resctrl.ResctrlError("%s failed: %s" % (args[0], err.strip()))

    return Step("mount resctrl (%s)" % (",".join(options) or "no options"),
                lambda: command(argv), lambda: command(["umount", target]))


def wanted_state(params, root, name, exists, current, info):
    """(schemata, cpus, pids, monitor) checked against the mounted tree, or Refused."""
    problems, warnings = [], []
    common, per_cpu = _topology.read_cpuinfo(root)
    vendor_amd = any(block.get("vendor_id") in AMD_VENDORS for block in per_cpu + [common])
    mba_mbps = "mba_MBps" in (resctrl.mount_options(root) or [])
    default = resctrl.read_group(root, "")
    wanted = plan.wanted_schemata(params["schemata"], info, default["schemata"], current["schemata"],
                                  vendor_amd, mba_mbps, problems, warnings)
    if not exists and plan.closids_left(info, len(resctrl.groups(root))) < 1:
        problems.append("no CLOSID left for a new group (num_closids=%s, groups: %s)"
                        % (min(e.get("num_closids", 0) for e in info.values() if "num_closids" in e) if info else 0,
                           ", ".join(resctrl.groups(root)) or "none"))
    cpus = format_cpulist(parse_cpulist(params["cpus"])) if params["cpus"] is not None else None
    pids = list(params["pids"] or [])
    if params["unit"]:
        unit_found = unit_pids(root, params["unit"])
        if not unit_found:
            problems.append("unit %s is not running" % params["unit"])
        pids += unit_found
    monitor = plan.monitor_groups(params["monitor"], problems)
    for pid in pids + [p for watched in monitor.values() for p in watched]:
        if pid <= 0 or not _sched.pid_exists(root, pid):
            problems.append("no process %s" % pid)
    refuse_if(problems)
    return wanted, cpus, pids, monitor, warnings


def converge(module, journal):
    params, root, name = module.params, module.params["root"], module.params["name"]
    refuse_if(request_problems(params, root))
    mount = mount_step(module, root)
    if mount is not None:
        if module.check_mode:
            return dict(changed=True, msg="would %s; nothing else can be checked before that" % mount.describe)
        journal.run(mount)

    info = resctrl.read_info(root)
    exists = name == "" or name in resctrl.groups(root)
    current = resctrl.read_group(root, name) if exists else {"schemata": {}, "cpus": "", "tasks": []}
    before = {"exists": exists, "schemata": current["schemata"], "cpus": current["cpus"], "tasks": len(current["tasks"])}
    writer = ResctrlWriter(root)
    if params["state"] == "absent":
        steps = [writer.remove_step(name)] if exists else []
        with resctrl.Lock(root):
            journal.apply(steps)
        return dict(changed=exists or mount is not None, before=before, after={"exists": False})

    wanted, cpus, pids, monitor, warnings = wanted_state(params, root, name, exists, current, info)
    for warning in warnings:
        module.warn(warning)
    steps = writer.plan(name, exists, wanted, current, cpus, pids, monitor)
    with resctrl.Lock(root):
        journal.apply(steps)
    after = {"exists": True, "schemata": dict(current["schemata"], **wanted),
             "cpus": cpus if cpus is not None else current["cpus"], "tasks": len(set(current["tasks"]) | set(pids))}
    result = dict(changed=bool(steps) or mount is not None, before=before, after=after,
                  diff=dict(before=plan.render(before), after=plan.render(after)))
    if steps and not module.check_mode:
        result["last_cmd_status"] = resctrl.last_cmd_status(root)
    if "L3_MON" in info and (exists or not module.check_mode):
        result["monitoring"] = dict([("group", resctrl.mon_readings(root, name))] + [
            (mon, resctrl.mon_readings(root, name, mon)) for mon in monitor])
    return result


def main():
    run_module(ARGUMENT_SPEC, converge)


if __name__ == "__main__":
    main()
