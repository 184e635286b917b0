# -*- coding: utf-8 -*-
# Copyright: cpuinfer.llm contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The resctrl filesystem (Intel RDT / AMD PQoS): what the kernel and the mounted tree offer."""

from __future__ import absolute_import, division, print_function

import os

from ansible_collections.cpuinfer.llm.plugins.module_utils._knobs import knob_path, read_knob

__metaclass__ = type

RESCTRL_MOUNT = "/sys/fs/resctrl"


def kernel_supports(root):
    """resctrl is listed in /proc/filesystems (CONFIG_X86_CPU_RESCTRL)."""
    try:
        text = read_knob(root, "/proc/filesystems")
    except Exception:  # pylint: disable=broad-except
        return False
    return any(line.split()[-1] == "resctrl" for line in text.splitlines() if line.split())


def info_resources(root):
    """Names of the directories under info/ (L3, L3CODE, L2, MB, L3_MON, ...) of a mounted tree."""
    info = knob_path(root, RESCTRL_MOUNT + "/info")
    if not os.path.isdir(info):
        return []
    return sorted(name for name in os.listdir(info) if os.path.isdir(os.path.join(info, name)))
