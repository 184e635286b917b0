#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright: cpuinfer.llm contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import absolute_import, division, print_function

__metaclass__ = type

DOCUMENTATION = r"""
module: thp
short_description: Set transparent huge pages (enabled, defrag, khugepaged) and keep them across reboots
version_added: 1.0.0
description:
  - Sets the kernel's transparent huge page policy under C(/sys/kernel/mm/transparent_hugepage).
  - For inference hosts V(madvise) with O(defrag=never) gives huge pages to the model's mapped
    memory (llama.cpp asks for them) without stalling every other allocation on compaction.
  - Persists the values in C(/etc/tmpfiles.d/cpuinfer-thp.conf), which systemd-tmpfiles writes into
    sysfs early at boot. Values offered by the running kernel are read from sysfs and checked
    before anything is written; on a failed write every value written by this run is put back.
author: cpuinfer.llm maintainers (@cpuinfer)
options:
  enabled:
    description: THP policy for anonymous memory.
    type: str
    choices: [always, madvise, never]
  defrag:
    description: When page faults may stall on compaction to get a huge page.
    type: str
    choices: [always, defer, defer+madvise, madvise, never]
  khugepaged:
    description: Settings of the khugepaged collapse daemon; only the keys given are managed.
    type: dict
    suboptions:
      defrag:
        description: Whether khugepaged may compact memory (V(0) or V(1)).
        type: int
      pages_to_scan:
        description: Pages scanned per wake-up.
        type: int
      scan_sleep_millisecs:
        description: Sleep between scans.
        type: int
      alloc_sleep_millisecs:
        description: Sleep after a failed huge page allocation.
        type: int
      max_ptes_none:
        description: How many unmapped small pages a collapse may fill.
        type: int
extends_documentation_fragment:
  - cpuinfer.llm.kernel
  - cpuinfer.llm.kernel.persistent
"""

EXAMPLES = r"""
- name: Huge pages only where the inference server asks for them, never stall on compaction
  cpuinfer.llm.thp:
    enabled: madvise
    defrag: never

- name: Slow khugepaged down on a latency-sensitive host
  cpuinfer.llm.thp:
    khugepaged:
      defrag: 0
      scan_sleep_millisecs: 30000
"""

RETURN = r"""
before:
  description: Values before the run (managed keys and everything the kernel reported).
  returned: always
  type: dict
  sample: {enabled: always, defrag: madvise, khugepaged.defrag: 1}
after:
  description: Values after the run (in check mode, what they would be).
  returned: always
  type: dict
  sample: {enabled: madvise, defrag: never, khugepaged.defrag: 1}
persistent_file:
  description: The tmpfiles.d drop-in that re-applies the values at boot.
  returned: when O(persistent=true)
  type: str
  sample: /etc/tmpfiles.d/cpuinfer-thp.conf
"""

from ansible_collections.cpuinfer.llm.plugins.module_utils._thp_settings import OPTIONS, converge
from ansible_collections.cpuinfer.llm.plugins.module_utils._runner import run_module

ARGUMENT_SPEC = dict(OPTIONS, root=dict(type="path", default="/"))


def main():
    run_module(ARGUMENT_SPEC, converge)


if __name__ == "__main__":
    main()
