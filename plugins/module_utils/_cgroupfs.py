# -*- coding: utf-8 -*-
# Copyright: cpuinfer.llm contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The cgroup v2 filesystem: which hierarchy the host runs, and the controllers it offers."""

from __future__ import absolute_import, division, print_function

from ansible_collections.cpuinfer.llm.plugins.module_utils._knobs import knob_exists, read_knob

__metaclass__ = type

CGROUP_MOUNT = "/sys/fs/cgroup"


def mounts(root):
    """(mountpoint, fstype) pairs from /proc/mounts."""
    result = []
    for line in read_knob(root, "/proc/mounts").splitlines():
        fields = line.split()
        if len(fields) >= 3:
            result.append((fields[1], fields[2]))
    return result


def hierarchy_version(root):
    """2 for the unified hierarchy at /sys/fs/cgroup, 'hybrid' for v1 with a v2 mount beside it,
    1 for legacy v1 only, None when no cgroup filesystem is mounted."""
    found = mounts(root)
    if (CGROUP_MOUNT, "cgroup2") in found:
        return 2
    has_v1 = any(fstype == "cgroup" for dummy, fstype in found)
    has_v2 = any(fstype == "cgroup2" for dummy, fstype in found)
    if has_v1 and has_v2:
        return "hybrid"
    if has_v1:
        return 1
    return None


def available_controllers(root, group=""):
    relative = "%s/%s/cgroup.controllers" % (CGROUP_MOUNT, group) if group else CGROUP_MOUNT + "/cgroup.controllers"
    if not knob_exists(root, relative):
        return []
    return sorted(read_knob(root, relative).split())
