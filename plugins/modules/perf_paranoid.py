#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright: cpuinfer.llm contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import absolute_import, division, print_function

__metaclass__ = type

DOCUMENTATION = r"""
module: perf_paranoid
short_description: Set kernel.perf_event_paranoid safely, persisted and reversible
version_added: 1.0.0
description:
  - Sets C(kernel.perf_event_paranoid) in the running kernel and in
    C(/etc/sysctl.d/90-cpuinfer-perf-paranoid.conf), which records the level found before the
    first change so that O(state=absent) can put it back.
  - The safe way to let an inference service read hardware counters is to keep the level at
    V(2) or higher and grant that one service C(CAP_PERFMON) (Linux 5.8 and later), for example
    C(AmbientCapabilities=CAP_PERFMON) in its systemd unit.
  - V(-1) opens every perf event, kernel and CPU-wide ones included, to every user. Hardening guides
    (KSPP, DISA STIG) forbid it; the module refuses it unless O(allow_unrestricted=true), and then
    records the opt-in in the drop-in.
  - V(3) and V(4) only mean more than V(2) on kernels carrying the Debian/Android restriction patch;
    RV(honours_level_3) tells whether the running kernel does.
author: cpuinfer.llm maintainers (@cpuinfer)
options:
  level:
    description:
      - The wanted level, V(-1) to V(4). Required when O(state=present).
    type: int
  state:
    description:
      - V(present) sets O(level).
      - V(absent) restores the level recorded before this module first changed it and removes the
        drop-in; nothing happens when there is no drop-in.
    type: str
    choices: [present, absent]
    default: present
  allow_unrestricted:
    description:
      - Must be V(true) to set V(-1). Prefer C(CAP_PERFMON) on the one service that needs counters.
    type: bool
    default: false
extends_documentation_fragment:
  - cpuinfer.llm.kernel
  - cpuinfer.llm.kernel.persistent
"""

EXAMPLES = r"""
- name: Keep unprivileged users away from perf (the service gets CAP_PERFMON instead)
  cpuinfer.llm.perf_paranoid:
    level: 2

- name: "Lab only: open every perf event to every user, on record"
  cpuinfer.llm.perf_paranoid:
    level: -1
    allow_unrestricted: true

- name: Put back the level the host had before the collection touched it
  cpuinfer.llm.perf_paranoid:
    state: absent
"""

RETURN = r"""
previous:
  description: The level before the run.
  returned: always
  type: int
  sample: 3
level:
  description: The level after the run (in check mode, what it would be).
  returned: always
  type: int
  sample: 2
original:
  description: The level recorded before the collection first changed it, when a drop-in exists.
  returned: when known
  type: int
  sample: 3
honours_level_3:
  description:
    - V(true) when the running kernel has the restriction patch (levels 3+ forbid perf_event_open
      to unprivileged users), V(false) when it does not (3+ act as 2), V(null) when its build
      configuration cannot be read.
  returned: always
  type: bool
persistent_file:
  description: The sysctl.d drop-in.
  returned: always
  type: str
  sample: /etc/sysctl.d/90-cpuinfer-perf-paranoid.conf
"""

from ansible_collections.cpuinfer.llm.plugins.module_utils._perf_paranoid_settings import OPTIONS, converge
from ansible_collections.cpuinfer.llm.plugins.module_utils._runner import run_module

ARGUMENT_SPEC = dict(OPTIONS, root=dict(type="path", default="/"))


def main():
    run_module(ARGUMENT_SPEC, converge)


if __name__ == "__main__":
    main()
