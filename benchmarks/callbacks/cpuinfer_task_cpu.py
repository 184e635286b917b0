# Copyright: cpuinfer.llm contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The CPU of each worker ansible-playbook forks, by host and task (benchmarks/run converge).

ansible-core forks one worker per host and task - skipped tasks and includes too - and that worker templates the
task, runs its action (ssh clients included) and sends the result. The benchmark's totals say what all workers cost;
this callback says which tasks: each worker appends one JSON line (host, task, action, its own user and system
seconds, and those of the ssh clients and commands it waited for) to the file in CPUINFER_TASK_CPU_FILE, as its task
ends (so not its exit). With CPUINFER_TASK_PROFILE_DIR set as well, each worker also runs under cProfile on process
time and leaves its stats there (benchmarks/worker_profile.py sums them). Enabled, it wraps the worker's run when the
callback loads, in ansible-playbook's own process, before the first fork; without the file variable it changes nothing."""

from __future__ import absolute_import, division, print_function

import json
import os
import resource

from ansible.executor.process import worker
from ansible.plugins.callback import CallbackBase

__metaclass__ = type

DOCUMENTATION = r"""
name: cpuinfer_task_cpu
type: aggregate
short_description: appends each worker's CPU seconds, by host and task, to the file in CPUINFER_TASK_CPU_FILE
description:
  - One JSON line per worker, written as the worker ends its task.
requirements:
  - enabled in callbacks_enabled
"""


def _record(path, process):
    own = resource.getrusage(resource.RUSAGE_SELF)
    waited = resource.getrusage(resource.RUSAGE_CHILDREN)
    task = process._task
    line = json.dumps({"pid": os.getpid(), "host": process._host.name, "task": task.get_name(), "action": task.action,
                       "user": own.ru_utime, "sys": own.ru_stime,
                       "children_user": waited.ru_utime, "children_sys": waited.ru_stime}) + "\n"
    # one write of one short line to a file opened for appending: lines of workers running at once do not mix
    descriptor = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
    try:
        os.write(descriptor, line.encode("utf-8"))
    finally:
        os.close(descriptor)


def _plain(function):
    # ansible-core 2.19 tags the strings it templates (str subclasses), Jinja's code objects carry them as file
    # names, and marshal, which pstats files are written with, refuses a str subclass
    path, line, name = function
    return str(path), int(line), str(name)


def _dump(profile, path):
    """Writes the stats as Profile.dump_stats does, with plain keys."""
    import marshal
    profile.create_stats()
    stats = {_plain(function): (calls, primitive, own, cumulative,
                                {_plain(caller): value for caller, value in callers.items()})
             for function, (calls, primitive, own, cumulative, callers) in profile.stats.items()}
    with open(path, "wb") as out:
        marshal.dump(stats, out)


def _counted(run, path, profile_dir):
    def counted_run(process):
        if not profile_dir:
            run(process)
            _record(path, process)
            return
        import cProfile
        import time
        profile = cProfile.Profile(time.process_time)
        try:
            profile.runcall(run, process)
        finally:
            # the record first: the worker has sent its result, and ansible-playbook stops the workers still
            # alive when its play ends, so the last task's dump may not finish
            _record(path, process)
            _dump(profile, os.path.join(profile_dir, "%d.prof" % os.getpid()))
    return counted_run


class CallbackModule(CallbackBase):
    CALLBACK_VERSION = 2.0
    CALLBACK_TYPE = "aggregate"
    CALLBACK_NAME = "cpuinfer_task_cpu"
    CALLBACK_NEEDS_ENABLED = True

    def __init__(self, *args, **kwargs):
        super(CallbackModule, self).__init__(*args, **kwargs)
        path = os.environ.get("CPUINFER_TASK_CPU_FILE")
        if path and not getattr(worker.WorkerProcess._run, "cpuinfer_counted", False):
            counted = _counted(worker.WorkerProcess._run, path, os.environ.get("CPUINFER_TASK_PROFILE_DIR"))
            counted.cpuinfer_counted = True
            worker.WorkerProcess._run = counted
