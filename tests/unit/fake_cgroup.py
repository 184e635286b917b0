"""A small emulation of the cgroup v2 filesystem's write semantics, for unit tests.

Plain files cannot act like cgroupfs (writing '+cpu' to subtree_control, moving a pid through
cgroup.procs), so tests route the helpers' writes and mkdirs through FakeCgroupKernel.
"""

import os
import shutil
from pathlib import Path

from ansible_collections.cpuinfer.llm.plugins.module_utils import _cgroupfs, _knobs
from ansible_collections.cpuinfer.llm.plugins.module_utils._cpulist import format_cpulist, parse_cpulist

from kernel_tree import write_tree

MOUNT = "sys/fs/cgroup"
CONTROLLER_FILES = {
    "cpu": {"cpu.weight": "100", "cpu.idle": "0", "cpu.max": "max 100000",
            "cpu.stat": "usage_usec 5\nnr_periods 0\nnr_throttled 0\nthrottled_usec 0",
            "cpu.pressure": "some avg10=0.00 avg60=0.00 avg300=0.00 total=0\nfull avg10=0.00 avg60=0.00 avg300=0.00 total=0"},
    "memory": {"memory.min": "0", "memory.low": "0", "memory.high": "max", "memory.max": "max",
               "memory.swap.max": "max", "memory.oom.group": "0",
               "memory.events": "low 0\nhigh 0\nmax 0\noom 0\noom_kill 0",
               "memory.pressure": "some avg10=1.50 avg60=0.00 avg300=0.00 total=7\nfull avg10=0.00 avg60=0.00 avg300=0.00 total=0"},
    "io": {"io.weight": "default 100", "io.max": "", "io.pressure": "some avg10=0.00 avg60=0.00 avg300=0.00 total=0"},
    "cpuset": {"cpuset.cpus": "", "cpuset.mems": "", "cpuset.cpus.partition": "member"},
    "pids": {"pids.max": "max"},
}
DELEGATED = "system.slice/app.service"


class FakeCgroupKernel:
    def __init__(self, root, cpus="0-3", nodes="0", controllers="cpuset cpu io memory pids"):
        self.root = Path(root)
        self.cpus, self.nodes = cpus, nodes
        write_tree(root, {
            "/sys/devices/system/cpu/online": cpus + "\n",
            "/sys/devices/system/node/online": nodes + "\n",
            "/sys/dev/block/8:0/dev": "8:0\n",
            "/%s/cgroup.controllers" % MOUNT: controllers,
            "/%s/cgroup.subtree_control" % MOUNT: "",
            "/%s/cgroup.procs" % MOUNT: "1\n",
            "/%s/cpuset.cpus.effective" % MOUNT: cpus,
            "/%s/cpuset.mems.effective" % MOUNT: nodes,
            "/proc/1/stat": "1 (systemd) S", "/proc/1/cgroup": "0::/\n", "/proc/1/comm": "systemd\n",
            "/proc/mounts": "cgroup2 /sys/fs/cgroup cgroup2 rw,nosuid,nodev,noexec,relatime 0 0\n",
        })
        self.real_write, self.real_mkdir = _knobs.write_knob, _cgroupfs.make_group
        self.refuse = {}  # relative path -> errno message, to make the kernel say no

    def install(self, monkeypatch):
        monkeypatch.setattr(_knobs, "write_knob", self.write)
        monkeypatch.setattr(_cgroupfs, "make_group", self.mkdir)
        monkeypatch.setattr(_cgroupfs, "remove_group", self.rmdir)
        return self

    # -- building the starting state ------------------------------------------------------
    def delegated_unit(self, group=DELEGATED, pids=(4242,)):
        """A Delegate=yes service: systemd enabled every controller down to it and marked it."""
        parts = group.split("/")
        for depth in range(len(parts)):
            parent = "/".join(parts[:depth])
            self._set(parent, "cgroup.subtree_control", self._get("", "cgroup.controllers"))
            self.mkdir(str(self.root), "/".join(parts[:depth + 1]))
        os.setxattr(self._dir(group), "user.delegate", b"1")
        for pid in pids:
            self.spawn(pid, group)
        return group

    def spawn(self, pid, group, comm="sleep"):
        write_tree(self.root, {"/proc/%d/stat" % pid: "%d (%s) S" % (pid, comm), "/proc/%d/comm" % pid: comm + "\n"})
        self._move(pid, group)

    # -- what the helpers call --------------------------------------------------------------
    def mkdir(self, root, group):
        os.mkdir(self._dir(group))
        parent = group.rpartition("/")[0]
        enabled = self._get(parent, "cgroup.subtree_control").split()
        self._set(group, "cgroup.controllers", " ".join(enabled))
        self._set(group, "cgroup.subtree_control", "")
        self._set(group, "cgroup.procs", "")
        for controller in enabled:
            self._add_controller_files(group, controller)

    def rmdir(self, root, group):
        """cgroupfs removes a group with its interface files, unless it has children or processes."""
        directory = Path(self._dir(group))
        if any(p.is_dir() for p in directory.iterdir()) or self._get(group, "cgroup.procs").split():
            raise _cgroupfs.CgroupError("cannot remove %s: Device or resource busy" % group)
        shutil.rmtree(directory)

    def write(self, root, relative, value):
        key = relative.lstrip("/")
        if key in self.refuse:
            raise _knobs.KnobError("cannot write /%s: %s" % (key, self.refuse[key]))
        group, name = self._split(relative)
        handler = getattr(self, "_write_" + name.replace(".", "_"), None)
        if handler is None:
            self.real_write(root, relative, value)
        else:
            handler(group, str(value))

    # -- semantics --------------------------------------------------------------------------
    def _write_cgroup_subtree_control(self, group, value):
        enabled = set(self._get(group, "cgroup.subtree_control").split())
        available = set(self._get(group, "cgroup.controllers").split())
        sign, controller = value[0], value[1:]
        if controller not in available:
            raise _knobs.KnobError("cannot write subtree_control of %s: No such file or directory" % group)
        if group and sign == "+" and self._get(group, "cgroup.procs").split():
            raise _knobs.KnobError("cannot write subtree_control of %s: Device or resource busy" % group)
        (enabled.add if sign == "+" else enabled.discard)(controller)
        self._set(group, "cgroup.subtree_control", " ".join(sorted(enabled)))
        for child in _cgroupfs.child_groups(str(self.root), group) if group else self._root_children():
            child_group = (group + "/" + child) if group else child
            self._set(child_group, "cgroup.controllers", " ".join(sorted(enabled)))
            if sign == "+":
                self._add_controller_files(child_group, controller)
            else:
                for name in CONTROLLER_FILES.get(controller, {}):
                    (Path(self._dir(child_group)) / name).unlink(missing_ok=True)

    def _write_cgroup_procs(self, group, value):
        self._move(int(value), group)

    def _write_cpu_max(self, group, value):
        if value.split() == ["max"]:
            value = "max " + self._get(group, "cpu.max").split()[1]
        self._set(group, "cpu.max", value)

    def _write_io_weight(self, group, value):
        self._merge_line(group, "io.weight", value, drop=lambda v: v == "default")

    def _write_io_max(self, group, value):
        self._merge_line(group, "io.max", value, drop=lambda v: all(x.endswith("=max") for x in v.split()))

    def _write_cpuset_cpus(self, group, value):
        self._set(group, "cpuset.cpus", format_cpulist(parse_cpulist(value)))

    def _write_cpuset_cpus_partition(self, group, value):
        if value == "member" or self._get(group, "cpuset.cpus"):
            self._set(group, "cpuset.cpus.partition", value)
        else:
            self._set(group, "cpuset.cpus.partition", "%s invalid (Cpu list in cpuset.cpus not exclusive)" % value)

    # -- plumbing ---------------------------------------------------------------------------
    def _merge_line(self, group, name, value, drop):
        key, rest = value.split(" ", 1)
        lines = dict(line.split(" ", 1) for line in self._get(group, name).splitlines() if line)
        if drop(rest) and key != "default":
            lines.pop(key, None)
        else:
            lines[key] = rest
        self._set(group, name, "\n".join("%s %s" % item for item in sorted(lines.items())))

    def _move(self, pid, group):
        cgroup_file = self.root / ("proc/%d/cgroup" % pid)
        if cgroup_file.exists():
            old = cgroup_file.read_text().strip()[3:].strip("/")
            self._set(old, "cgroup.procs", "\n".join(p for p in self._get(old, "cgroup.procs").split() if p != str(pid)))
        if group and self._get(group, "cgroup.subtree_control").split():
            raise _knobs.KnobError("cannot write cgroup.procs of %s: Device or resource busy" % group)
        self._set(group, "cgroup.procs", "\n".join(self._get(group, "cgroup.procs").split() + [str(pid)]))
        cgroup_file.write_text("0::/%s\n" % group)

    def _add_controller_files(self, group, controller):
        for name, content in CONTROLLER_FILES.get(controller, {}).items():
            if not (Path(self._dir(group)) / name).exists():
                self._set(group, name, content)
        if controller == "cpuset":
            self._set(group, "cpuset.cpus.effective", self.cpus)
            self._set(group, "cpuset.mems.effective", self.nodes)

    def _root_children(self):
        return sorted(p.name for p in (self.root / MOUNT).iterdir() if p.is_dir())

    def _dir(self, group):
        return str(self.root / MOUNT / group) if group else str(self.root / MOUNT)

    def _split(self, relative):
        path = relative.lstrip("/")[len(MOUNT) + 1:]
        group, dummy, name = path.rpartition("/")
        return group, name

    def _get(self, group, name):
        path = Path(self._dir(group)) / name
        return path.read_text() if path.exists() else ""

    def _set(self, group, name, content):
        (Path(self._dir(group)) / name).write_text(content)
