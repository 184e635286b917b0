# -*- coding: utf-8 -*-
# Copyright: cpuinfer.llm contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""cgroup_v2 requests: validate the whole request against the host, normalise wanted and current
values to the kernel's canonical text, and list what differs. Nothing here writes."""

from __future__ import absolute_import, division, print_function

import os
import re

from ansible_collections.cpuinfer.llm.plugins.module_utils._decimal import is_decimal
from ansible_collections.cpuinfer.llm.plugins.module_utils import _cgroupfs, _sched, _topology
from ansible_collections.cpuinfer.llm.plugins.module_utils._cpulist import CpuListError, format_cpulist, parse_cpulist
from ansible_collections.cpuinfer.llm.plugins.module_utils._knobs import knob_exists
from ansible_collections.cpuinfer.llm.plugins.module_utils._sizes import SizeError, UNLIMITED, format_size, parse_size, size_le

__metaclass__ = type

SIZE_OPTIONS = (
    ("memory_min", "memory.min"), ("memory_low", "memory.low"), ("memory_high", "memory.high"),
    ("memory_max", "memory.max"), ("memory_swap_max", "memory.swap.max"),
)
CONTROLLER_OF = {
    "cpu_weight": "cpu", "cpu_idle": "cpu", "cpu_max": "cpu", "memory_min": "memory", "memory_low": "memory",
    "memory_high": "memory", "memory_max": "memory", "memory_swap_max": "memory", "memory_oom_group": "memory",
    "io_weight": "io", "io_max": "io", "cpuset_cpus": "cpuset", "cpuset_mems": "cpuset",
    "cpuset_partition": "cpuset", "pids_max": "pids",
}
IO_MAX_KEYS = ("rbps", "wbps", "riops", "wiops")
# Below this no process runs: memory.high/max under it is an instant reclaim storm or OOM kill, almost
# always a size written without its unit ("512" is 512 bytes)
MEMORY_LIMIT_FLOOR = 16 << 20
LIMIT_OPTIONS = ("memory_high", "memory_max")
_DEVICE = re.compile(r"^[0-9]+:[0-9]+\Z")
DEFAULT_CPU_PERIOD = 100000


class Setting:
    """One value in one cgroup file; key is None for single-valued files, else the io.* line key."""

    def __init__(self, filename, wanted, key=None):
        self.filename, self.wanted, self.key = filename, wanted, key

    @property
    def label(self):
        return self.filename if self.key is None else "%s[%s]" % (self.filename, self.key)

    def line(self, value):
        """What to write to set value."""
        return value if self.key is None else "%s %s" % (self.key, value)


class HostView:
    """What validation needs to know about the host, read under root."""

    def __init__(self, root):
        self.root = root

    def online_cpus(self):
        return _topology.online_cpus(self.root)

    def online_nodes(self):
        return _topology.online_nodes(self.root)

    def effective(self, group, name):
        """cpuset.cpus.effective / cpuset.mems.effective of the nearest existing group."""
        while group and not _cgroupfs.group_exists(self.root, group):
            group = group.rpartition("/")[0]
        text = _cgroupfs.read_file(self.root, group, name)
        return None if text is None else parse_cpulist(text)

    def block_device_exists(self, device):
        return knob_exists(self.root, "/sys/dev/block/" + device)

    def pid_exists(self, pid):
        return _sched.pid_exists(self.root, pid)

    def is_kernel_thread(self, pid):
        return _sched.is_kernel_thread(self.root, pid)

    def available_controllers(self, group=""):
        return set(_cgroupfs.available_controllers(self.root, group))

    @staticmethod
    def page_size():
        return os.sysconf("SC_PAGE_SIZE")


def _check_cpu_max(value, problems):
    fields = str(value).split()
    if len(fields) == 1 and fields[0] == "max":
        return "max", None
    if len(fields) != 2 or not is_decimal(fields[1]) or not (fields[0] == "max" or is_decimal(fields[0])):
        problems.append("cpu_max %r is malformed: use 'max', 'QUOTA PERIOD' or 'max PERIOD' in microseconds" % (value,))
        return None
    quota, period = fields[0], int(fields[1])
    if not 1000 <= period <= 1000000:
        problems.append("cpu_max period %d is outside 1000..1000000 us" % period)
    if quota != "max" and int(quota) < 1000:
        problems.append("cpu_max quota %s is below 1000 us" % quota)
    return quota, period


def _sizes(params, problems, page):
    sizes = {}
    for option, dummy in SIZE_OPTIONS:
        if params.get(option) is None:
            continue
        try:
            value = parse_size(params[option])
        except SizeError as exc:
            problems.append("%s: %s" % (option, exc))
            continue
        if option in LIMIT_OPTIONS and value != UNLIMITED and value < MEMORY_LIMIT_FLOOR:
            hint = "write the size with its unit, such as %sM" % value if value else "for no limit write 'max'"
            problems.append("%s %r is %d bytes, below the %s no process can run in (an instant OOM); %s"
                            % (option, params[option], value, format_size(MEMORY_LIMIT_FLOOR), hint))
            continue
        sizes[option] = value if value == UNLIMITED else value - value % page  # the kernel rounds down too
    order = [name for name in ("memory_min", "memory_low", "memory_high", "memory_max") if name in sizes]
    for smaller, larger in zip(order, order[1:]):
        if not size_le(sizes[smaller], sizes[larger]):
            problems.append("%s (%s) must not exceed %s (%s): min <= low <= high <= max"
                            % (smaller, params[smaller], larger, params[larger]))
    return sizes


def _cpuset(params, key, host, group, problems):
    text = params.get(key)
    if text is None:
        return None
    try:
        wanted = parse_cpulist(str(text))
    except CpuListError as exc:
        problems.append("%s: %s" % (key, exc))
        return None
    online = host.online_cpus() if key == "cpuset_cpus" else host.online_nodes()
    missing = wanted - online
    if missing:
        what = "CPUs" if key == "cpuset_cpus" else "NUMA nodes"
        problems.append("%s: %s %s not online on this host (online: %s)"
                        % (key, what, format_cpulist(missing), format_cpulist(online)))
        return None
    parent_effective = host.effective(group.rpartition("/")[0], "cpuset.%s.effective" % key.split("_")[1])
    if parent_effective is not None and not wanted <= parent_effective:
        problems.append("%s: %s is not within the parent's effective set %s"
                        % (key, format_cpulist(wanted - parent_effective), format_cpulist(parent_effective)))
    return format_cpulist(wanted)


def _io_weights(params, host, problems):
    settings = []
    for device, weight in sorted((params.get("io_weight") or {}).items()):
        if device != "default" and not _DEVICE.match(device):
            problems.append("io_weight key %r must be 'default' or MAJ:MIN" % device)
        elif device != "default" and not host.block_device_exists(device):
            problems.append("io_weight: no block device %s on this host" % device)
        elif isinstance(weight, bool) or not (isinstance(weight, int) or is_decimal(str(weight).strip())) \
                or not 1 <= int(str(weight).strip()) <= 10000:
            problems.append("io_weight[%s] must be an integer in 1..10000, not %r" % (device, weight))
        else:
            settings.append(Setting("io.weight", str(int(str(weight).strip())), key=device))
    return settings


def _io_limit(device, name, value, problems):
    """One io.max value in the kernel's form: bytes for *bps, a count for *iops, or 'max'."""
    if value == UNLIMITED:
        return UNLIMITED
    if isinstance(value, bool):
        problems.append("io_max[%s].%s must be a number or 'max', not %r" % (device, name, value))
        return None
    if name.endswith("bps"):
        try:
            parsed = parse_size(value)
        except SizeError as exc:
            problems.append("io_max[%s].%s: %s" % (device, name, exc))
            return None
    else:
        text = str(value).strip()
        if not is_decimal(text):
            problems.append("io_max[%s].%s must be a whole number of operations per second or 'max', not %r"
                            % (device, name, value))
            return None
        parsed = int(text)
    if parsed == 0:
        problems.append("io_max[%s].%s is 0: the kernel would stop all %s on the device; use a positive "
                        "rate or 'max'" % (device, name, "reads" if name[0] == "r" else "writes"))
        return None
    return parsed


def _io_limits(params, host, problems):
    settings = []
    for device, limits in sorted((params.get("io_max") or {}).items()):
        if not _DEVICE.match(device) or not host.block_device_exists(device):
            problems.append("io_max: %r is not a block device of this host (MAJ:MIN)" % device)
            continue
        if not isinstance(limits, dict) or set(limits) - set(IO_MAX_KEYS):
            problems.append("io_max[%s] must be a dict of %s, not %r" % (device, ", ".join(IO_MAX_KEYS), limits))
            continue
        line = [(name, _io_limit(device, name, limits.get(name, UNLIMITED), problems)) for name in IO_MAX_KEYS]
        if all(value is not None for dummy, value in line):
            settings.append(Setting("io.max", " ".join("%s=%s" % pair for pair in line), key=device))
    return settings


def _io(params, host, problems):
    return _io_weights(params, host, problems) + _io_limits(params, host, problems)


def build(params, host):
    """(settings, controllers, problems): every problem of the request, before anything is written."""
    problems = []
    group = params["path"]
    try:
        _cgroupfs.group_relative(group)
    except _cgroupfs.CgroupError as exc:
        return [], set(), [str(exc)]
    settings = []
    weight = params.get("cpu_weight")
    if weight is not None:
        if 1 <= weight <= 10000:
            settings.append(Setting("cpu.weight", str(weight)))
        else:
            problems.append("cpu_weight must be in 1..10000, not %d" % weight)
    if params.get("cpu_idle") is not None:
        settings.append(Setting("cpu.idle", "1" if params["cpu_idle"] else "0"))
    if params.get("cpu_max") is not None:
        parsed = _check_cpu_max(params["cpu_max"], problems)
        if parsed:
            settings.append(Setting("cpu.max", parsed))  # period filled in against the current file
    sizes = _sizes(params, problems, host.page_size())
    for option, filename in SIZE_OPTIONS:
        if option in sizes:
            settings.append(Setting(filename, str(sizes[option])))
    if params.get("memory_oom_group") is not None:
        settings.append(Setting("memory.oom.group", "1" if params["memory_oom_group"] else "0"))
    settings += _io(params, host, problems)
    for key, filename in (("cpuset_cpus", "cpuset.cpus"), ("cpuset_mems", "cpuset.mems")):
        value = _cpuset(params, key, host, group, problems)
        if value is not None:
            settings.append(Setting(filename, value))
    if params.get("cpuset_partition") is not None:
        settings.append(Setting("cpuset.cpus.partition", params["cpuset_partition"]))
    pids_max = params.get("pids_max")
    if pids_max is not None:
        if str(pids_max) == "max" or is_decimal(str(pids_max)):
            settings.append(Setting("pids.max", str(pids_max)))
        else:
            problems.append("pids_max must be a non-negative integer or 'max', not %r" % (pids_max,))
    system = []
    for pid in params.get("procs") or []:
        if pid <= 0 or not host.pid_exists(pid):
            problems.append("procs: no process %d on this host" % pid)
        elif pid == 1 or host.is_kernel_thread(pid):
            system.append(pid)
    if system and not params.get("allow_system_processes"):
        problems.append("procs: %s are PID 1 or kernel threads, which must stay in the root group; set "
                        "allow_system_processes=true if you mean it" % ", ".join(str(pid) for pid in system))
    controllers = set(params.get("controllers") or [])
    controllers.update(CONTROLLER_OF[option] for option in CONTROLLER_OF if params.get(option) not in (None, {}, []))
    unavailable = controllers - host.available_controllers()
    if unavailable:
        problems.append("controllers not available on this host: %s" % ", ".join(sorted(unavailable)))
    return settings, controllers, problems


def current_value(setting, text):
    """Normalise what the kernel shows to the text a wanted value is compared with."""
    if text is None:
        return None
    if setting.filename in ("cpuset.cpus", "cpuset.mems"):
        return format_cpulist(parse_cpulist(text))
    if setting.filename == "cpuset.cpus.partition":
        return text.split()[0] if text.split() else ""
    if setting.filename == "io.weight":
        return str(_cgroupfs.parse_nested_keyed(text).get(setting.key, "default"))
    if setting.filename == "io.max":
        limits = _cgroupfs.parse_nested_keyed(text).get(setting.key, {})
        return " ".join("%s=%s" % (name, limits.get(name, UNLIMITED)) for name in IO_MAX_KEYS)
    return text.strip()


def resolve_wanted(setting, current_text):
    """cpu.max 'max' keeps the current period; everything else is already canonical."""
    if setting.filename != "cpu.max":
        return setting.wanted
    quota, period = setting.wanted
    if period is None:
        fields = (current_text or "").split()
        period = int(fields[1]) if len(fields) == 2 else DEFAULT_CPU_PERIOD
    return "%s %d" % (quota, period)
