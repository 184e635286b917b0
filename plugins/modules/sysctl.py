#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright: cpuinfer.llm contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import absolute_import, division, print_function

__metaclass__ = type

DOCUMENTATION = r"""
module: sysctl
short_description: Set kernel sysctls now and keep them in one sysctl.d drop-in
version_added: 1.0.0
description:
  - Writes each value under C(/proc/sys) and persists the set in one C(sysctl.d) drop-in, which
    systemd-sysctl applies at boot; one module run for the whole set, so a role's sysctls cost one
    round trip, and the key-to-path rule lives in one place (the collection's sysctl helper).
  - Keys this kernel does not have are left out of the drop-in and reported in RV(missing) (a
    kernel without NUMA has no C(kernel.numa_balancing)); with O(missing=fail) they refuse the run.
  - The whole request is checked first (key syntax, one-line values); on a failed write every
    value and file written by the run is put back. C(kernel.perf_event_paranoid) belongs to
    M(cpuinfer.llm.perf_paranoid), which keeps its safety rules; it is refused here.
author: cpuinfer.llm maintainers (@cpuinfer)
options:
  values:
    description: Sysctl keys (dotted) and their values.
    type: dict
    required: true
  dropin:
    description: The drop-in that persists the values.
    type: path
    default: /etc/sysctl.d/90-cpuinfer-tuning.conf
  missing:
    description: What a key this kernel lacks does.
    type: str
    choices: [skip, fail]
    default: skip
extends_documentation_fragment:
  - cpuinfer.llm.kernel
  - cpuinfer.llm.kernel.persistent
"""

EXAMPLES = r"""
- name: Keep RT throttling on, no automatic NUMA balancing
  cpuinfer.llm.sysctl:
    values:
      kernel.sched_rt_runtime_us: 950000
      kernel.numa_balancing: 0

- name: Put values back in the running kernel only (a revert; the drop-in is removed separately)
  cpuinfer.llm.sysctl:
    values:
      kernel.numa_balancing: 1
    persistent: false
"""

RETURN = r"""
before:
  description: The running values of the keys this kernel has, before the run.
  returned: always
  type: dict
  sample: {kernel.numa_balancing: "1"}
after:
  description: The running values after the run (in check mode, what they would be).
  returned: always
  type: dict
  sample: {kernel.numa_balancing: "0"}
missing:
  description: Keys of O(values) this kernel does not have (left out of the drop-in).
  returned: always
  type: list
  elements: str
  sample: [kernel.numa_balancing]
persistent_file:
  description: The drop-in.
  returned: when O(persistent=true)
  type: str
  sample: /etc/sysctl.d/90-cpuinfer-tuning.conf
"""

from ansible_collections.cpuinfer.llm.plugins.module_utils._sysctl_settings import OPTIONS, converge
from ansible_collections.cpuinfer.llm.plugins.module_utils._runner import run_module

ARGUMENT_SPEC = dict(OPTIONS, root=dict(type="path", default="/"))


def main():
    run_module(ARGUMENT_SPEC, converge)


if __name__ == "__main__":
    main()
