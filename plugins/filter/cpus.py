# -*- coding: utf-8 -*-
# Copyright: cpuinfer.llm contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Filters that turn host_facts topology into thread counts and CPU plans."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

DOCUMENTATION = r"""
name: inference_threads
short_description: Threads an inference server should run on the CPUs it really owns
version_added: 0.1.0
description:
  - Counts the physical cores that have at least one CPU in O(allowed_cpus), then caps the count
    by the CPU quota (V(150) percent allows 2 threads). llama.cpp's own default (half or all of the
    host's cores) ignores cpusets and quotas, and its threads wait on each other.
author: cpuinfer.llm maintainers (@cpuinfer)
positional: allowed_cpus, cpu_quota
options:
  _input:
    description: C(ansible_facts.cpuinfer.core_cpus), the CPU list of each physical core.
    type: list
    elements: str
    required: true
  allowed_cpus:
    description: The unit's AllowedCPUs as a CPU list; empty means every CPU.
    type: str
    default: ""
  cpu_quota:
    description: The unit's CPUQuota in percent of one CPU; 0 means none.
    type: int
    default: 0
"""

EXAMPLES = r"""
- name: Threads for a unit pinned to CPUs 2-7 with a 300 % quota
  ansible.builtin.debug:
    msg: "{{ ansible_facts.cpuinfer.core_cpus | cpuinfer.llm.inference_threads('2-7', 300) }}"
"""

RETURN = r"""
_value:
  description: The number of threads, at least 1.
  type: int
"""

from ansible.errors import AnsibleFilterError
from ansible_collections.cpuinfer.llm.plugins.module_utils._cpulist import CpuListError, parse_cpulist


def inference_threads(core_cpus, allowed_cpus="", cpu_quota=0):
    try:
        cores = [parse_cpulist(core) for core in core_cpus]
        allowed = parse_cpulist(allowed_cpus) if allowed_cpus else set().union(*cores) if cores else set()
    except CpuListError as exc:
        raise AnsibleFilterError("inference_threads: %s" % exc)
    owned = sum(1 for core in cores if core & allowed)
    if cpu_quota:
        owned = min(owned, -(-int(cpu_quota) // 100))
    return max(owned, 1)


class FilterModule:
    def filters(self):
        return {"inference_threads": inference_threads}
