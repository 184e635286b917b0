#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright: cpuinfer.llm contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import absolute_import, division, print_function

__metaclass__ = type

DOCUMENTATION = r"""
module: sched_policy
short_description: Set the scheduling policy of processes or threads, SCHED_DEADLINE included
version_added: 1.0.0
description:
  - Sets OTHER, BATCH, IDLE, FIFO, RR or DEADLINE per thread with C(sched_setattr(2)); systemd's
    C(CPUSchedulingPolicy=) has no DEADLINE and applies only at start.
  - Targets a PID, a list of PIDs, the processes of a running systemd unit (found in its cgroup)
    or processes by name; all their threads or only the main one.
  - FIFO and RR are refused while real-time throttling is off (C(kernel.sched_rt_runtime_us=-1)),
    because a spinning real-time thread would own its CPU. Keep throttling on, or set
    O(allow_unthrottled_rt).
  - Threads are compared before they are changed, so a second run reports no change. If the kernel
    refuses one thread, the threads already changed in the run are put back.
  - PID 1 and kernel threads are refused unless O(allow_system_processes=true), because a wrong policy
    there stalls the whole host.
  - With O(root) other than C(/) the module reads the threads' policy, real-time priority and nice
    from C(ROOT/proc/PID/task/TID/stat) and changes nothing, because the system calls act on real
    processes, which another root cannot redirect. Only O(state=query) and check mode run there;
    deadline parameters read as 0.
author: cpuinfer.llm maintainers (@cpuinfer)
options:
  pid:
    description: One process.
    type: int
  pids:
    description: Several processes.
    type: list
    elements: int
  unit:
    description: A running systemd unit, for example C(llama-server@model-a.service); its cgroup's processes.
    type: str
  process_name:
    description: Processes whose name (C(comm)) is exactly this.
    type: str
  threads:
    description: V(all) threads of each process, or only the V(main) thread.
    type: str
    choices: [all, main]
    default: all
  state:
    description: V(present) sets the policy; V(query) only reports the threads' current values.
    type: str
    choices: [present, query]
    default: present
  policy:
    description: The policy; required with O(state=present).
    type: str
    choices: [other, batch, idle, fifo, rr, deadline]
  priority:
    description: Real-time priority 1-99, required for V(fifo) and V(rr), not allowed otherwise.
    type: int
  nice:
    description: Nice value -20..19 for V(other) and V(batch); left as it is when not given.
    type: int
  runtime:
    description: DEADLINE runtime, in ns or with a unit (V(2ms)); 1024 ns <= runtime <= deadline <= period.
    type: str
  deadline:
    description: DEADLINE relative deadline.
    type: str
  period:
    description: DEADLINE period; defaults to O(deadline).
    type: str
  reset_on_fork:
    description: Children start with the default policy instead of inheriting this one.
    type: bool
    default: false
  allow_system_processes:
    description: Allow PID 1 and kernel threads as targets.
    type: bool
    default: false
  allow_unthrottled_rt:
    description: Allow V(fifo)/V(rr) while C(kernel.sched_rt_runtime_us) is -1.
    type: bool
    default: false
extends_documentation_fragment:
  - cpuinfer.llm.kernel
"""

EXAMPLES = r"""
- name: Latency-critical inference threads on FIFO 10 (RT throttling stays on)
  cpuinfer.llm.sched_policy:
    unit: llama-server@model-a.service
    policy: fifo
    priority: 10

- name: A periodic worker gets 10 ms every 50 ms (20 % of a CPU), guaranteed
  cpuinfer.llm.sched_policy:
    pid: "{{ worker_pid }}"
    threads: main
    policy: deadline
    runtime: 10ms
    deadline: 50ms
    period: 50ms

- name: Batch jobs yield to everything
  cpuinfer.llm.sched_policy:
    process_name: stress-ng
    policy: idle

- name: What do the server's threads run with?
  cpuinfer.llm.sched_policy:
    unit: llama-server@model-a.service
    state: query
"""

RETURN = r"""
threads:
  description: Each thread with its values before and after (after equals before with state=query).
  returned: always
  type: list
  elements: dict
  sample:
    - {pid: 812, tid: 812, name: python3, changed: true,
       before: {policy: other, priority: 0, nice: 0, runtime: 0, deadline: 0, period: 0, reset_on_fork: false},
       after: {policy: fifo, priority: 10, nice: 0, runtime: 0, deadline: 0, period: 0, reset_on_fork: false}}
"""

from ansible_collections.cpuinfer.llm.plugins.module_utils import _cgroupfs, _sched
from ansible_collections.cpuinfer.llm.plugins.module_utils._knobs import KnobError
from ansible_collections.cpuinfer.llm.plugins.module_utils._runner import Refused, Step, refuse_if, run_module
from ansible_collections.cpuinfer.llm.plugins.module_utils._sysctl import SysctlError, read_int

ARGUMENT_SPEC = dict(
    pid=dict(type="int"),
    pids=dict(type="list", elements="int"),
    unit=dict(type="str"),
    process_name=dict(type="str"),
    threads=dict(type="str", choices=["all", "main"], default="all"),
    state=dict(type="str", choices=["present", "query"], default="present"),
    policy=dict(type="str", choices=list(_sched.POLICY_NUMBERS)),
    priority=dict(type="int"),
    nice=dict(type="int"),
    runtime=dict(type="str"),
    deadline=dict(type="str"),
    period=dict(type="str"),
    reset_on_fork=dict(type="bool", default=False),
    allow_system_processes=dict(type="bool", default=False),
    allow_unthrottled_rt=dict(type="bool", default=False),
    root=dict(type="path", default="/"),
)
TARGETS = ("pid", "pids", "unit", "process_name")
MIN_DL_RUNTIME_NS = 1024


def wanted_attrs(params, problems):
    """Attrs to set (nice None = keep each thread's own), or None when the request is invalid."""
    policy, priority, nice = params["policy"], params["priority"], params["nice"]
    if policy is None:
        problems.append("policy is required with state=present")
        return None
    runtime = deadline = period = 0
    if policy in ("fifo", "rr"):
        if priority is None or not 1 <= priority <= 99:
            problems.append("policy %s needs priority 1..99, not %s" % (policy, priority))
    elif priority not in (None, 0):
        problems.append("priority is only for fifo and rr, not %s" % policy)
    if nice is not None and (policy not in ("other", "batch") or not -20 <= nice <= 19):
        problems.append("nice (-20..19) applies to other and batch only")
    if policy == "deadline":
        try:
            runtime = _sched.parse_duration_ns(params["runtime"])
            deadline = _sched.parse_duration_ns(params["deadline"])
            period = _sched.parse_duration_ns(params["period"] or params["deadline"])
        except ValueError as exc:
            problems.append("deadline needs runtime and deadline (period optional): %s" % exc)
        else:
            if not MIN_DL_RUNTIME_NS <= runtime <= deadline <= period:
                problems.append("deadline needs 1024 ns <= runtime (%d) <= deadline (%d) <= period (%d)"
                                % (runtime, deadline, period))
    elif any(params[k] is not None for k in ("runtime", "deadline", "period")):
        problems.append("runtime, deadline and period are only for policy deadline")
    return _sched.Attrs(policy, priority or 0, nice, runtime, deadline, period, params["reset_on_fork"])


def target_pids(params, root, problems):
    for name in ("unit", "process_name"):
        if params[name] is not None and not params[name].strip():
            problems.append("%s must not be empty" % name)
            return []
    given = [name for name in TARGETS if params[name] not in (None, [])]
    if len(given) != 1:
        problems.append("give exactly one of pid, pids, unit, process_name (got %s)" % (", ".join(given) or "none"))
        return []
    if params["unit"]:
        pids = _cgroupfs.unit_pids(root, params["unit"])
        if not pids:
            problems.append("unit %s is not running (no processes in its cgroup)" % params["unit"])
    elif params["process_name"]:
        pids = _sched.pids_named(root, params["process_name"])
        if not pids:
            problems.append("no process is named %s" % params["process_name"])
    else:
        pids = [params["pid"]] if params["pid"] is not None else params["pids"]
        for pid in pids:
            if pid <= 0 or not _sched.pid_exists(root, pid):
                problems.append("no process %d" % pid)
    if not params["allow_system_processes"]:
        system = [pid for pid in pids if pid > 0 and _sched.pid_exists(root, pid)
                  and (pid == 1 or _sched.is_kernel_thread(root, pid))]
        if system:
            problems.append("processes %s are PID 1 or kernel threads: a policy there can stall the whole host; "
                            "set allow_system_processes=true if you mean it" % ", ".join(str(pid) for pid in system))
    return pids


def matches(current, wanted):
    if current.policy != wanted.policy or current.reset_on_fork != wanted.reset_on_fork:
        return False
    if wanted.policy in ("fifo", "rr"):
        return current.priority == wanted.priority
    if wanted.policy == "deadline":
        return (current.runtime, current.deadline, current.period) == (wanted.runtime, wanted.deadline, wanted.period)
    if wanted.policy in ("other", "batch"):
        return wanted.nice is None or current.nice == wanted.nice
    return True


def rt_throttling_problem(root, wanted, params):
    if wanted is None or wanted.policy not in ("fifo", "rr") or params["allow_unthrottled_rt"]:
        return None
    try:
        if read_int(root, "kernel.sched_rt_runtime_us") == -1:
            return ("real-time throttling is off (kernel.sched_rt_runtime_us = -1): a spinning %s thread would "
                    "own its CPU; turn throttling on or set allow_unthrottled_rt" % wanted.policy)
    except (SysctlError, KnobError):
        pass  # no such sysctl (not a CFS/RT kernel): nothing to protect
    return None


def set_step(scheduler, tid, after, current):
    def do():
        try:
            scheduler.set(tid, after)
        except OSError as exc:
            raise _sched.SchedError("%s: %s" % (after.policy, _sched.explain(exc, after.policy)))

    return Step("thread %d" % tid, do, lambda: scheduler.set(tid, current))


def converge(module, journal):
    params, root = module.params, module.params["root"]
    problems = []
    wanted = wanted_attrs(params, problems) if params["state"] == "present" else None
    pids = target_pids(params, root, problems)
    problems.append(rt_throttling_problem(root, wanted, params))
    refuse_if([problem for problem in problems if problem])
    scheduler = _sched.scheduler_for(root)
    if not scheduler.can_change and wanted is not None and not module.check_mode:
        raise Refused("root is %s, not /: this module changes real threads through system calls, which another "
                      "root cannot redirect; with another root only state=query and check mode run; nothing changed"
                      % root)
    report, steps = [], []
    for pid in pids:
        for tid in _sched.threads_of(root, pid, params["threads"]):
            if hasattr(scheduler, "remember"):
                scheduler.remember(pid, tid)
            try:
                current = scheduler.get(tid)
            except OSError:
                continue  # the thread ended between listing and reading
            after = current
            if wanted is not None:
                after = wanted._replace(nice=current.nice if wanted.nice is None else wanted.nice)
            changed = not matches(current, after)
            report.append(dict(pid=pid, tid=tid, name=_sched.thread_name(root, pid, tid), changed=changed,
                               before=current._asdict(), after=after._asdict()))
            if changed:
                steps.append(set_step(scheduler, tid, after, current))
    journal.apply(steps)
    return dict(changed=bool(steps), threads=report)


def main():
    run_module(ARGUMENT_SPEC, converge)


if __name__ == "__main__":
    main()
