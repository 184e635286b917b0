# Copyright: cpuinfer.llm contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""ansible-playbook's own CPU seconds, apart from its workers' (benchmarks/run converge).

The benchmark counts the controller's CPU as everything ansible-playbook ran: its main process (the strategy's loop
that waits on workers, variables, results, callbacks) and the worker forked per host and task with the ssh clients
and local commands it started. The two grow differently on a fleet - the workers with hosts x tasks, the main
process's waiting loop with the play's wall time, shared by `forks` hosts - so the benchmark counts them apart:
this callback writes the main process's own user + system seconds when the playbook ends."""

from __future__ import absolute_import, division, print_function

import json
import os
import resource

from ansible.plugins.callback import CallbackBase

__metaclass__ = type

DOCUMENTATION = r"""
name: cpuinfer_controller_cpu
type: aggregate
short_description: writes ansible-playbook's own CPU seconds to the file in CPUINFER_CONTROLLER_CPU_FILE
description:
  - At the end of the playbook, the main process's user and system seconds (C(RUSAGE_SELF)), as JSON.
requirements:
  - enabled in callbacks_enabled
"""


class CallbackModule(CallbackBase):
    CALLBACK_VERSION = 2.0
    CALLBACK_TYPE = "aggregate"
    CALLBACK_NAME = "cpuinfer_controller_cpu"
    CALLBACK_NEEDS_ENABLED = True

    def v2_playbook_on_stats(self, stats):
        path = os.environ.get("CPUINFER_CONTROLLER_CPU_FILE")
        if not path:
            return
        own = resource.getrusage(resource.RUSAGE_SELF)
        with open(path, "w", encoding="utf-8") as out:
            json.dump({"main_process_cpu_seconds": own.ru_utime + own.ru_stime}, out)
