# -*- coding: utf-8 -*-
# Copyright: cpuinfer.llm contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The cgroup v2 filesystem: which hierarchy the host runs, and the controllers it offers."""

from __future__ import absolute_import, division, print_function

import os

from ansible_collections.cpuinfer.llm.plugins.module_utils._decimal import is_decimal, is_signed_decimal
from ansible_collections.cpuinfer.llm.plugins.module_utils._errors import HostError
from ansible_collections.cpuinfer.llm.plugins.module_utils._knobs import (
    knob_exists, knob_path, make_knob_directory, read_knob, remove_knob_directory, write_knob)
from ansible_collections.cpuinfer.llm.plugins.module_utils._sysctl import kernel_release

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


def kernel_has_cpu_idle(root):
    """Whether the kernel gives cgroups cpu.idle (5.15+, or a backport). A group with the cpu
    controller shows it or not; with none enabled yet, the kernel's release tells it."""
    groups = child_groups(root, "") if group_exists(root, "") else []
    with_cpu = [name for name in groups if knob_exists(root, file_relative(name, "cpu.weight"))]
    if with_cpu:
        return any(knob_exists(root, file_relative(name, "cpu.idle")) for name in with_cpu)
    release = kernel_release(root)
    if release is None:
        return False
    return [int(part) if is_decimal(part) else 0 for part in release.split(".")[:2]] >= [5, 15]


class CgroupError(HostError):
    """A path or value the cgroup filesystem would refuse, or a refused write."""


def group_relative(path):
    """'system.slice/x.service/work' -> '/sys/fs/cgroup/system.slice/x.service/work'.
    Absolute paths, '..' and '.' components and empty names are refused."""
    if not path or path.startswith("/"):
        raise CgroupError("path must be relative to the cgroup2 mount, not %r" % (path,))
    parts = path.split("/")
    for part in parts:
        if part in ("", ".", ".."):
            raise CgroupError("path %r has an empty, '.' or '..' component" % (path,))
    return CGROUP_MOUNT + "/" + "/".join(parts)


def ancestors(path):
    """'a/b/c' -> ['', 'a', 'a/b'] (the root first): the groups whose subtree_control matters."""
    parts = path.split("/")
    return [""] + ["/".join(parts[:i]) for i in range(1, len(parts))]


def file_relative(group, name):
    return (group_relative(group) if group else CGROUP_MOUNT) + "/" + name


def group_exists(root, group):
    return os.path.isdir(knob_path(root, group_relative(group) if group else CGROUP_MOUNT))


def read_file(root, group, name):
    """Text of a cgroup file, or None when the controller (and so the file) is absent."""
    relative = file_relative(group, name)
    return read_knob(root, relative) if knob_exists(root, relative) else None


def subtree_control(root, group):
    text = read_file(root, group, "cgroup.subtree_control")
    return set((text or "").split())


def procs(root, group):
    text = read_file(root, group, "cgroup.procs") or ""
    return [int(line) for line in text.split()]


def child_groups(root, group):
    base = knob_path(root, group_relative(group) if group else CGROUP_MOUNT)
    return sorted(name for name in os.listdir(base) if os.path.isdir(os.path.join(base, name)))


def make_group(root, group):
    make_knob_directory(root, group_relative(group), CgroupError, group)


def remove_group(root, group):
    remove_knob_directory(root, group_relative(group), CgroupError, group)


def keep_idle(root, group):
    """cpu.idle = 1 on a group (SCHED_IDLE against its siblings; kernel 5.15+), written only when it
    differs. False when the group or the kernel has no cpu.idle."""
    relative = file_relative(group, "cpu.idle")
    if not knob_exists(root, relative):
        return False
    if read_knob(root, relative).strip() != "1":
        write_knob(root, relative, "1")
    return True


def is_delegated(root, group):
    """systemd marks the cgroup of a Delegate=yes unit with the xattr trusted.delegate (or
    user.delegate for user managers) = 1; below such a group the tree is ours to manage."""
    path = knob_path(root, group_relative(group))
    for name in ("trusted.delegate", "user.delegate"):
        try:
            if os.getxattr(path, name).strip() in (b"1", b"true", b"yes"):
                return True
        except (OSError, AttributeError):
            continue
    return False


def parse_flat_keyed(text):
    """'usage_usec 10\\nnr_throttled 2' -> {'usage_usec': 10, 'nr_throttled': 2} (cpu.stat,
    memory.events)."""
    values = {}
    for line in (text or "").splitlines():
        fields = line.split()
        if len(fields) == 2:
            values[fields[0]] = int(fields[1]) if is_signed_decimal(fields[1]) else fields[1]
    return values


def parse_pressure(text):
    """PSI 'some avg10=0.00 avg60=... total=N' / 'full ...' -> {'some': {...}, 'full': {...}}."""
    result = {}
    for line in (text or "").splitlines():
        fields = line.split()
        if fields and fields[0] in ("some", "full"):
            result[fields[0]] = dict(
                (key, float(value) if "." in value else int(value))
                for key, value in (field.split("=", 1) for field in fields[1:])
            )
    return result


def parse_nested_keyed(text):
    """io.max / io.weight: '8:0 rbps=1 wbps=max' / 'default 100' / '8:0 200' -> {device: {...} | int}."""
    result = {}
    for line in (text or "").splitlines():
        fields = line.split()
        if not fields:
            continue
        if len(fields) == 2 and "=" not in fields[1]:
            result[fields[0]] = int(fields[1])
        else:
            result[fields[0]] = dict(field.split("=", 1) for field in fields[1:])
    return result


def process_group(root, pid):
    """The cgroup2 path of a process relative to the mount ('' for the root), from /proc/PID/cgroup."""
    for line in read_knob(root, "/proc/%d/cgroup" % pid).splitlines():
        if line.startswith("0::"):
            return line[3:].strip().strip("/")
    raise CgroupError("process %d is in no cgroup v2 group (is the host on cgroup v1?)" % pid)


def process_name(root, pid):
    relative = "/proc/%d/comm" % pid
    return read_knob(root, relative) if knob_exists(root, relative) else "?"


def processes_below(root, group):
    """{group: [pids]} for the group and every descendant that holds processes."""
    found = {}
    base = knob_path(root, group_relative(group))
    for directory, dummy_dirs, dummy_files in os.walk(base):
        relative = os.path.relpath(directory, knob_path(root, CGROUP_MOUNT))
        pids = procs(root, relative)
        if pids:
            found[relative] = pids
    return found


def delegation_base(root, group):
    """The nearest existing proper ancestor that systemd delegated, or None."""
    for ancestor in reversed(ancestors(group)[1:]):
        if group_exists(root, ancestor) and is_delegated(root, ancestor):
            return ancestor
    return None


def read_signals(root, group):
    """Throttling, memory events and pressure (PSI avg10) of a group, as far as its files exist."""
    cpu_stat = parse_flat_keyed(read_file(root, group, "cpu.stat"))
    events = parse_flat_keyed(read_file(root, group, "memory.events"))
    pressure = {}
    for resource in ("cpu", "memory", "io"):
        parsed = parse_pressure(read_file(root, group, resource + ".pressure"))
        if parsed:
            pressure[resource] = dict((kind, values.get("avg10")) for kind, values in parsed.items())
    return {
        "cpu_stat": dict((k, cpu_stat[k]) for k in ("usage_usec", "nr_periods", "nr_throttled", "throttled_usec") if k in cpu_stat),
        "memory_events": dict((k, events[k]) for k in ("low", "high", "max", "oom", "oom_kill") if k in events),
        "pressure_avg10": pressure,
    }


def pressure_trigger(root, group, resource, stall_us, window_us):
    """Open a PSI trigger: the kernel raises POLLPRI on the returned fd whenever tasks of the group
    stalled on resource (some) for stall_us within a window_us window. The trigger lives while the
    fd is open; poll it with select.poll and POLLPRI. Callers close it."""
    path = knob_path(root, file_relative(group, resource + ".pressure"))
    fd = os.open(path, os.O_RDWR | os.O_NONBLOCK)
    try:
        os.write(fd, ("some %d %d\0" % (stall_us, window_us)).encode())
    except OSError:
        os.close(fd)
        raise
    return fd


def unit_group(root, unit):
    """The cgroup2 path (relative to the mount) of a systemd unit, or None when it has none now."""
    base = knob_path(root, CGROUP_MOUNT)
    for directory, dirs, dummy_files in os.walk(base):
        if os.path.basename(directory) == unit:
            return os.path.relpath(directory, base)
        dirs[:] = [d for d in dirs if d.endswith((".slice", ".service", ".scope")) or d == unit]
    return None


def unit_pids(root, unit):
    """Processes of a systemd unit: those in its cgroup and below, found in the cgroup2 tree."""
    group = unit_group(root, unit)
    return [] if group is None else group_pids(root, group)


def group_pids(root, group):
    """Processes in a group and every group below it, ascending."""
    return sorted(pid for pids in processes_below(root, group).values() for pid in pids)
