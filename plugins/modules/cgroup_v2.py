#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright: cpuinfer.llm contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import absolute_import, division, print_function

__metaclass__ = type

DOCUMENTATION = r"""
module: cgroup_v2
short_description: Manage cgroup v2 groups below a systemd-delegated unit - CPU, memory, IO, cpuset, pids
version_added: 1.0.0
description:
  - Creates and removes cgroup v2 groups, enables controllers in the ancestors'
    C(cgroup.subtree_control), sets their limits and moves processes into them.
  - B(systemd owns the cgroup tree.) It rewrites the files of the groups it manages (a unit's
    C(CPUQuota=) is its C(cpu.max)) and turns off controllers in C(cgroup.subtree_control) that its
    units do not need. So this module only writes B(below) the cgroup of a unit started with
    C(Delegate=yes), which systemd marks with the extended attribute C(trusted.delegate=1) and then
    leaves alone. For the limits of a unit itself use its unit properties (C(MemoryMax=),
    C(CPUWeight=), C(AllowedCPUs=), ...), for example through the C(llama_server) role.
  - The kernel forbids processes in a group whose C(subtree_control) has controllers (the "no
    internal processes" rule), so move the delegated unit's own processes into a leaf group first
    with O(procs).
  - The whole request is checked before the first write (ranges, sizes, C(min <= low <= high <=
    max), online CPUs and NUMA nodes, the parent's effective cpuset, block devices, processes). If
    the kernel refuses a write, every write of the run is undone and the error says which failed.
  - O(memory_high) and O(memory_max) below 16M are refused, since C(512) is 512 bytes, an instant OOM;
    write sizes with their unit. A zero C(io.max) rate is refused too, as it stops the device's IO.
  - A host that mounts cgroup v1 or a hybrid hierarchy is refused with what to do (boot with the
    unified hierarchy; the host_tuning role does it), also with O(require_delegation=false).
author: cpuinfer.llm maintainers (@cpuinfer)
options:
  path:
    description: The group, relative to the cgroup2 mount, for example C(system.slice/llama.service/model-a).
    type: str
    required: true
  state:
    description:
      - V(present) creates the group and sets what is given.
      - V(absent) removes the group and its empty descendants; a group with processes is an error
        that names them.
    type: str
    choices: [present, absent]
    default: present
  require_delegation:
    description:
      - Refuse paths that are not below a delegated unit. Setting V(false) lets the module write
        anywhere, where systemd may later undo its writes; only for hosts without systemd.
    type: bool
    default: true
  controllers:
    description:
      - Controllers to enable for the group (in the subtree_control of each ancestor below the
        delegated unit). Those implied by the options given (C(cpu) for O(cpu_weight), ...) are
        added automatically.
    type: list
    elements: str
    choices: [cpu, cpuset, io, memory, pids, hugetlb, rdma, misc]
  cpu_weight:
    description: C(cpu.weight), the share under contention, 1 to 10000 (100 is the default).
    type: int
  cpu_idle:
    description: C(cpu.idle); V(true) gives the group SCHED_IDLE-like lowest priority.
    type: bool
  cpu_max:
    description:
      - C(cpu.max) as V(max), V(QUOTA PERIOD) or V(max PERIOD) in microseconds; quota at least
        1000, period 1000 to 1000000. V(max) keeps the current period.
    type: str
  memory_min:
    description: C(memory.min), memory protected from reclaim, as bytes, with K/M/G/T (binary) or V(max).
    type: str
  memory_low:
    description: C(memory.low), best-effort protection (model pages, KV cache).
    type: str
  memory_high:
    description: C(memory.high), the throttle and reclaim point, usually 75-85 % of O(memory_max).
    type: str
  memory_max:
    description: C(memory.max), the OOM boundary.
    type: str
  memory_swap_max:
    description: C(memory.swap.max).
    type: str
  memory_oom_group:
    description: C(memory.oom.group); V(true) makes the OOM killer take the whole group.
    type: bool
  io_weight:
    description: C(io.weight) by V(default) and per device C(MAJ:MIN), 1 to 10000.
    type: dict
  io_max:
    description:
      - C(io.max) per device C(MAJ:MIN), a dict of C(rbps), C(wbps) (sizes), C(riops), C(wiops).
        Keys left out are V(max).
    type: dict
  cpuset_cpus:
    description: C(cpuset.cpus), CPU list such as V(2-7,10); must be online and within the parent's effective CPUs.
    type: str
  cpuset_mems:
    description: C(cpuset.mems), NUMA node list; must be online and within the parent's effective nodes.
    type: str
  cpuset_partition:
    description: C(cpuset.cpus.partition); the kernel's reason is returned when it refuses.
    type: str
    choices: [member, root, isolated]
  pids_max:
    description: C(pids.max), an integer or V(max).
    type: str
  procs:
    description: Processes to move into the group. PID 1 and kernel threads are refused unless O(allow_system_processes=true).
    type: list
    elements: int
  allow_system_processes:
    description: Allow PID 1 and kernel threads in O(procs).
    type: bool
    default: false
extends_documentation_fragment:
  - cpuinfer.llm.kernel
"""

EXAMPLES = r"""
- name: Leaf group for the delegated unit's own processes (no internal processes)
  cpuinfer.llm.cgroup_v2:
    path: system.slice/inference.service/supervisor
    procs: "{{ inference_main_pids }}"

- name: One model's group with its share, caps and protection
  cpuinfer.llm.cgroup_v2:
    path: system.slice/inference.service/model-a
    cpu_weight: 400
    cpu_max: "200000 100000"
    memory_low: 6G
    memory_high: 13G
    memory_max: 16G
    cpuset_cpus: 2-7
    cpuset_mems: "0"
    io_weight:
      default: 200

- name: Remove the group (fails, naming them, while processes remain)
  cpuinfer.llm.cgroup_v2:
    path: system.slice/inference.service/model-a
    state: absent
"""

RETURN = r"""
before:
  description: Each managed file's value before the run (null when the group did not exist).
  returned: always
  type: dict
  sample: {cpu.weight: "100", memory.max: max}
after:
  description: Each managed file's value after the run (in check mode, what it would be).
  returned: always
  type: dict
  sample: {cpu.weight: "400", memory.max: "17179869184"}
signals:
  description: Throttling (cpu.stat), memory.events and PSI avg10 of cpu, memory and io.
  returned: when the group exists after the run
  type: dict
  sample: {cpu_stat: {nr_throttled: 0, throttled_usec: 0}, memory_events: {oom_kill: 0}, pressure_avg10: {cpu: {some: 0.0}}}
removed:
  description: Groups removed (state=absent), deepest first.
  returned: when state=absent
  type: list
  elements: str
"""

from ansible_collections.cpuinfer.llm.plugins.module_utils import _cgroup_apply as steps
from ansible_collections.cpuinfer.llm.plugins.module_utils import _cgroup_plan as plan
from ansible_collections.cpuinfer.llm.plugins.module_utils import _cgroupfs as cgroupfs
from ansible_collections.cpuinfer.llm.plugins.module_utils._runner import Refused, Step, refuse_if, render_values, run_module

ARGUMENT_SPEC = dict(
    path=dict(type="str", required=True),
    state=dict(type="str", choices=["present", "absent"], default="present"),
    require_delegation=dict(type="bool", default=True),
    controllers=dict(type="list", elements="str", choices=["cpu", "cpuset", "io", "memory", "pids", "hugetlb", "rdma", "misc"]),
    cpuset_partition=dict(type="str", choices=["member", "root", "isolated"]),
    procs=dict(type="list", elements="int"),
    allow_system_processes=dict(type="bool", default=False),
    root=dict(type="path", default="/"),
)
# the interface files given as text (sizes, "max", CPU lists), as whole numbers, as on/off, as per-device maps
ARGUMENT_SPEC.update((name, dict(type="str")) for name in (
    "cpu_max", "memory_min", "memory_low", "memory_high", "memory_max", "memory_swap_max", "cpuset_cpus",
    "cpuset_mems", "pids_max"))
ARGUMENT_SPEC.update(cpu_weight=dict(type="int"), cpu_idle=dict(type="bool"), memory_oom_group=dict(type="bool"),
                     io_weight=dict(type="dict"), io_max=dict(type="dict"))
NOT_DELEGATED = (
    "%s is not below a unit started with Delegate=yes: systemd owns that part of the tree and would "
    "undo these writes. Create the groups below a delegated unit, or set the unit's own limits with "
    "systemd properties (MemoryMax=, CPUWeight=, AllowedCPUs=, ...)"
)


def plan_present(root, group, base, settings, controllers, pids):
    """(steps, before, after) for state=present. Processes move in before the ancestors get
    controllers: while they still sit in an ancestor, the kernel refuses the controllers."""
    creates, moves, enables, writes, before, after = [], [], [], [], {}, {}
    chain = cgroupfs.ancestors(group)[1:] + [group]
    start = 0 if base is None else chain.index(base) + 1  # nothing at or above the delegated unit
    for member in chain[start:]:
        if not cgroupfs.group_exists(root, member):
            creates.append(steps.make_group(root, member))
    for pid in pids:
        origin = cgroupfs.process_group(root, pid)
        before["procs[%d]" % pid], after["procs[%d]" % pid] = origin, group
        if origin != group:
            moves.append(steps.move_process(root, group, pid, origin))
    for parent in ([""] + chain)[start:-1]:
        enabled = cgroupfs.subtree_control(root, parent) if cgroupfs.group_exists(root, parent) else set()
        for controller in sorted(controllers - enabled):
            enables.append(steps.enable_controller(root, parent, controller))
    exists = cgroupfs.group_exists(root, group)
    for setting in settings:
        text = cgroupfs.read_file(root, group, setting.filename) if exists else None
        wanted = plan.resolve_wanted(setting, text)
        current = plan.current_value(setting, text)
        before[setting.label], after[setting.label] = current, wanted
        if current != wanted:
            writes.append(steps.set_value(root, group, setting, wanted, current))
    return creates + moves + enables + writes, before, after


def plan_absent(root, group):
    if not cgroupfs.group_exists(root, group):
        return [], []
    occupied = cgroupfs.processes_below(root, group)
    if occupied:
        named = "; ".join(
            "%s: %s" % (g, ", ".join("%d (%s)" % (pid, cgroupfs.process_name(root, pid)) for pid in pids))
            for g, pids in sorted(occupied.items())
        )
        raise Refused("cannot remove %s: processes remain in it: %s; nothing written" % (group, named))
    order = []

    def collect(current):
        for child in cgroupfs.child_groups(root, current):
            collect(current + "/" + child)
        order.append(current)

    collect(group)
    removals = [Step("remove %s" % g, (lambda g=g: cgroupfs.remove_group(root, g)),
                     (lambda g=g: cgroupfs.make_group(root, g))) for g in order]
    return removals, order


def hierarchy_problem(root):
    version = cgroupfs.hierarchy_version(root)
    if version == 2:
        return None
    if version is None:
        return "no cgroup filesystem is mounted at %s" % cgroupfs.CGROUP_MOUNT
    return ("this host mounts cgroup %s at %s: this module manages the unified hierarchy (cgroup v2) only. "
            "Boot with systemd.unified_cgroup_hierarchy=1 (the host_tuning role does it, with "
            "host_tuning_reboot_ok); nothing written" % ("v1" if version == 1 else "v1 beside v2 (hybrid)",
                                                         cgroupfs.CGROUP_MOUNT))


def delegation_problems(root, group, controllers, require_delegation):
    """(base, problems): the delegated unit the group lies below, and what stands against it."""
    base = cgroupfs.delegation_base(root, group)
    if base is None:
        return None, [NOT_DELEGATED % group] if require_delegation else []
    missing = controllers - set(cgroupfs.available_controllers(root, base))
    if missing:
        return base, ["controllers %s are not delegated to %s (Delegate=yes delegates all; a list may leave them out)"
                      % (", ".join(sorted(missing)), base)]
    return base, []


def converge(module, journal):
    params, root = module.params, module.params["root"]
    group = params["path"]
    problem = hierarchy_problem(root)
    if problem:
        raise Refused(problem)
    settings, controllers, problems = plan.build(params, plan.HostView(root))
    refuse_if(problems)
    base, problems = delegation_problems(root, group, controllers, params["require_delegation"])
    refuse_if(problems)

    if params["state"] == "absent":
        todo, removed = plan_absent(root, group)
        before, after = {"exists": bool(removed)}, {"exists": False}
    else:
        todo, before, after = plan_present(root, group, base, settings, controllers, params["procs"] or [])
        removed = None
    journal.apply(todo)

    result = dict(changed=bool(todo), before=before, after=after,
                  diff=dict(before=render_values(before), after=render_values(after)))
    if removed is not None:
        result["removed"] = removed
    elif cgroupfs.group_exists(root, group):
        result["signals"] = cgroupfs.read_signals(root, group)
    return result


def main():
    run_module(ARGUMENT_SPEC, converge)


if __name__ == "__main__":
    main()
