# -*- coding: utf-8 -*-
# Copyright: cpuinfer.llm contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The resctrl filesystem (Intel RDT / AMD PQoS): what the kernel and the mounted tree offer."""

from __future__ import absolute_import, division, print_function

import fcntl
import os

from ansible_collections.cpuinfer.llm.plugins.module_utils._decimal import is_decimal, is_signed_decimal
from ansible_collections.cpuinfer.llm.plugins.module_utils._errors import HostError
from ansible_collections.cpuinfer.llm.plugins.module_utils._knobs import (
    knob_exists, knob_path, make_knob_directory, read_knob, remove_knob_directory)

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


CACHE_RESOURCES = ("L3", "L3CODE", "L3DATA", "L2", "L2CODE", "L2DATA")
MB_RESOURCE = "MB"
RESERVED_NAMES = ("info", "mon_groups", "mon_data")
MON_EVENTS = ("llc_occupancy", "mbm_total_bytes", "mbm_local_bytes")


class ResctrlError(HostError):
    """resctrl is absent, or refused a write (with the kernel's last_cmd_status)."""


def _relative(*parts):
    return "/".join([RESCTRL_MOUNT] + [p for p in parts if p])


def mount_options(root):
    """Options of the mounted resctrl filesystem, or None when it is not mounted."""
    for line in read_knob(root, "/proc/mounts").splitlines():
        fields = line.split()
        if len(fields) >= 4 and fields[2] == "resctrl":
            return fields[3].split(",")
    return None


def read_info(root):
    """{resource: {file: value}} from info/, numbers as ints and masks as ints."""
    info = {}
    for resource in info_resources(root):
        values = {}
        directory = knob_path(root, _relative("info", resource))
        for name in os.listdir(directory):
            text = read_knob(root, _relative("info", resource, name))
            if name in ("cbm_mask", "shareable_bits"):
                values[name] = int(text, 16)
            elif is_signed_decimal(text):
                values[name] = int(text)
            else:
                values[name] = text
        info[resource] = values
    return info


def parse_schemata(text):
    """'L3:0=fff;1=fff\\nMB:0=100' -> {'L3': {'0': 'fff', '1': 'fff'}, 'MB': {'0': '100'}}."""
    result = {}
    for line in (text or "").splitlines():
        if ":" not in line:
            continue
        resource, domains = line.split(":", 1)
        result[resource.strip()] = dict(
            part.strip().split("=", 1) for part in domains.split(";") if "=" in part
        )
    return result


def format_schemata_line(resource, domains):
    return "%s:%s\n" % (resource, ";".join("%s=%s" % (d, domains[d]) for d in sorted(domains, key=int)))


def groups(root):
    base = knob_path(root, RESCTRL_MOUNT)
    return sorted(name for name in os.listdir(base)
                  if os.path.isdir(os.path.join(base, name)) and name not in RESERVED_NAMES)


def group_relative(name, filename=""):
    return _relative(name, filename)


def read_group(root, name):
    """{'schemata': {...}, 'cpus': 'list', 'tasks': [pids]} of a group ('' = the default group)."""
    return {
        "schemata": parse_schemata(read_knob(root, group_relative(name, "schemata"))),
        "cpus": read_knob(root, group_relative(name, "cpus_list")),
        "tasks": [int(t) for t in read_knob(root, group_relative(name, "tasks")).split()],
    }


def last_cmd_status(root):
    relative = _relative("info", "last_cmd_status")
    return read_knob(root, relative) if knob_exists(root, relative) else "ok"


def mon_readings(root, name, mon_group=""):
    """Per event, the sum over L3 domains of mon_data (bytes); 'Unavailable' readings are skipped."""
    parts = [name, "mon_groups", mon_group] if mon_group else [name]
    base = knob_path(root, _relative(*(parts + ["mon_data"])))
    totals = {}
    if not os.path.isdir(base):
        return totals
    for domain in sorted(os.listdir(base)):
        for event in MON_EVENTS:
            relative = _relative(*(parts + ["mon_data", domain, event]))
            if knob_exists(root, relative):
                text = read_knob(root, relative)
                if is_decimal(text):
                    totals[event] = totals.get(event, 0) + int(text)
    return totals


class Lock:
    """Exclusive flock on the resctrl root while writing, as other resctrl tools (pqos) take it."""

    def __init__(self, root):
        self.path = knob_path(root, RESCTRL_MOUNT)
        self.fd = None

    def __enter__(self):
        self.fd = os.open(self.path, os.O_RDONLY | os.O_DIRECTORY)
        fcntl.flock(self.fd, fcntl.LOCK_EX)
        return self

    def __exit__(self, *exc):
        os.close(self.fd)  # closing releases the flock
        return False


def make_group(root, name):
    make_knob_directory(root, group_relative(name), ResctrlError, "resctrl group " + name)


def remove_group(root, name):
    """The kernel moves the group's tasks back to the default group (or the parent)."""
    remove_knob_directory(root, group_relative(name), ResctrlError, "resctrl group " + name)
