#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright: cpuinfer.llm contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import absolute_import, division, print_function

__metaclass__ = type

DOCUMENTATION = r"""
module: rdt_cat
short_description: Cache and memory-bandwidth allocation (Intel RDT CAT/CDP/MBA, AMD PQoS) through resctrl
version_added: 0.1.0
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
    description: CPUs whose default allocation is this group (C(cpus_list)).
    type: str
  pids:
    description: Tasks to assign to the group.
    type: list
    elements: int
  unit:
    description: A running systemd unit whose processes are assigned to the group.
    type: str
  monitor:
    description: Monitoring groups to create under the group, each with the tasks it watches (tasks of this group).
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

from ansible.module_utils.basic import AnsibleModule
from ansible_collections.cpuinfer.llm.plugins.module_utils import _rdt_plan as plan
from ansible_collections.cpuinfer.llm.plugins.module_utils import _resctrl as resctrl
from ansible_collections.cpuinfer.llm.plugins.module_utils._cgroupfs import unit_pids
from ansible_collections.cpuinfer.llm.plugins.module_utils._cpulist import CpuListError, format_cpulist, parse_cpulist
from ansible_collections.cpuinfer.llm.plugins.module_utils._knobs import KnobError, knob_exists, read_knob
from ansible_collections.cpuinfer.llm.plugins.module_utils._rdt_apply import ResctrlWriter

NO_RDT = (
    "this host has no RDT: resctrl is not in /proc/filesystems. Cache allocation needs an Intel CPU "
    "with RDT (CAT/CDP/MBA) or an AMD CPU with PQoS, and a kernel with CONFIG_X86_CPU_RESCTRL; "
    "ARM MPAM is not exposed through resctrl in mainline kernels yet, and virtual CPUs usually have none"
)
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


def ensure_mounted(module, root):
    """None when resctrl is mounted; else mounts it (or says why it cannot)."""
    if resctrl.mount_options(root) is not None:
        return False
    if not resctrl.kernel_supports(root):
        module.fail_json(msg=NO_RDT)
    if module.params["mount"] is None:
        module.fail_json(msg="resctrl is not mounted at %s; give mount: {} to mount it" % resctrl.RESCTRL_MOUNT)
    options = [name for name in ("cdp", "cdpl2", "mba_MBps") if module.params["mount"][name]]
    if module.check_mode:
        module.exit_json(changed=True, msg="would mount resctrl (%s); nothing else can be checked before that"
                         % (",".join(options) or "no options"))
    argv = ["mount", "-t", "resctrl", "resctrl", root.rstrip("/") + resctrl.RESCTRL_MOUNT]
    if options:
        argv += ["-o", ",".join(options)]
    rc, dummy, err = module.run_command(argv)
    if rc != 0:
        module.fail_json(msg="mounting resctrl failed: %s" % err.strip())
    return True


def validate_name(name):
    if "/" in name or name in (".", "..") or name in resctrl.RESERVED_NAMES:
        return "group name %r is not allowed (no '/', not %s)" % (name, ", ".join(resctrl.RESERVED_NAMES))
    return None


def main():
    module = AnsibleModule(argument_spec=ARGUMENT_SPEC, supports_check_mode=True)
    params, root, name = module.params, module.params["root"], module.params["name"]
    problem = validate_name(name)
    if problem:
        module.fail_json(msg=problem)
    mounted_now = ensure_mounted(module, root)

    info = resctrl.read_info(root)
    default = resctrl.read_group(root, "")
    exists = name == "" or name in resctrl.groups(root)
    current = resctrl.read_group(root, name) if exists else {"schemata": {}, "cpus": "", "tasks": []}
    before = {"exists": exists, "schemata": current["schemata"], "cpus": current["cpus"], "tasks": len(current["tasks"])}

    if params["state"] == "absent":
        if name == "":
            module.fail_json(msg="the default group cannot be removed")
        if exists and not module.check_mode:
            with resctrl.Lock(root):
                ResctrlWriter(root).remove_group(name)
        module.exit_json(changed=exists, before=before, after={"exists": False})

    problems, warnings = [], []
    vendor_amd = "AuthenticAMD" in read_knob(root, "/proc/cpuinfo") or "HygonGenuine" in read_knob(root, "/proc/cpuinfo")
    mba_mbps = "mba_MBps" in (resctrl.mount_options(root) or [])
    wanted = plan.wanted_schemata(params["schemata"], info, default["schemata"], current["schemata"],
                                  vendor_amd, mba_mbps, problems, warnings)
    if not exists and plan.closids_left(info, len(resctrl.groups(root))) < 1:
        problems.append("no CLOSID left for a new group (num_closids=%s, groups: %s)"
                        % (min(e.get("num_closids", 0) for e in info.values() if "num_closids" in e) if info else 0,
                           ", ".join(resctrl.groups(root)) or "none"))
    cpus = None
    if params["cpus"] is not None:
        try:
            cpus = format_cpulist(parse_cpulist(params["cpus"]))
        except CpuListError as exc:
            problems.append("cpus: %s" % exc)
    pids = list(params["pids"] or [])
    if params["unit"]:
        unit_found = unit_pids(root, params["unit"])
        if not unit_found:
            problems.append("unit %s is not running" % params["unit"])
        pids += unit_found
    for pid in pids + [p for watched in (params["monitor"] or {}).values() for p in watched]:
        if not knob_exists(root, "/proc/%d/stat" % int(pid)):
            problems.append("no process %s" % pid)
    if problems:
        module.fail_json(msg="invalid request, nothing written: " + "; ".join(problems))
    for warning in warnings:
        module.warn(warning)

    writer = ResctrlWriter(root)
    changes = writer.plan(name, exists, wanted, current, cpus, pids, params["monitor"] or {})
    after = {"exists": True, "schemata": dict(current["schemata"], **wanted),
             "cpus": cpus if cpus is not None else current["cpus"], "tasks": len(set(current["tasks"]) | set(pids))}
    if changes and not module.check_mode:
        try:
            with resctrl.Lock(root):
                writer.run(changes)
        except (resctrl.ResctrlError, KnobError) as exc:
            module.fail_json(msg=str(exc), before=before, last_cmd_status=resctrl.last_cmd_status(root))
    result = dict(changed=bool(changes) or mounted_now, before=before, after=after,
                  diff=dict(before=plan.render(before), after=plan.render(after)))
    if changes and not module.check_mode:
        result["last_cmd_status"] = resctrl.last_cmd_status(root)
    if "L3_MON" in info and (exists or not module.check_mode):
        result["monitoring"] = dict([("group", resctrl.mon_readings(root, name))] + [
            (mon, resctrl.mon_readings(root, name, mon)) for mon in (params["monitor"] or {})])
    module.exit_json(**result)


if __name__ == "__main__":
    main()
