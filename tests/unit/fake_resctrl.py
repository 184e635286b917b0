"""Fake resctrl trees shaped like an Intel Xeon and an AMD EPYC, with the kernel's write semantics
(schemata lines merge, tasks move, last_cmd_status explains refusals)."""

import shutil
from pathlib import Path

from ansible_collections.cpuinfer.llm.plugins.module_utils import _knobs, _resctrl

from kernel_tree import write_tree

RESCTRL = "sys/fs/resctrl"


def _info(root, resources):
    files = {}
    for resource, values in resources.items():
        for name, value in values.items():
            files["/%s/info/%s/%s" % (RESCTRL, resource, name)] = "%s\n" % value
    write_tree(root, files)


class FakeResctrl:
    def __init__(self, root, vendor, domains, cache_full, mb_full, info, extra_mounts=""):
        self.root = Path(root)
        self.cache_full, self.mb_full, self.domains = cache_full, mb_full, domains
        self.refuse = None  # (substring of a schemata write, last_cmd_status text)
        write_tree(root, {
            "/proc/cpuinfo": "processor\t: 0\nvendor_id\t: %s\n" % vendor,
            "/proc/filesystems": "nodev\tcgroup2\nnodev\tresctrl\n",
            "/proc/mounts": "cgroup2 /sys/fs/cgroup cgroup2 rw 0 0\nresctrl /sys/fs/resctrl resctrl rw%s 0 0\n" % extra_mounts,
            "/%s/info/last_cmd_status" % RESCTRL: "ok\n",
            "/%s/tasks" % RESCTRL: "1\n4242\n",
            "/%s/cpus_list" % RESCTRL: "0-7\n",
            "/sys/devices/system/cpu/online": "0-7\n",
            "/proc/1/stat": "1 (systemd) S", "/proc/4242/stat": "4242 (llama) S",
        })
        _info(root, info)
        (self.root / RESCTRL / "mon_groups").mkdir(parents=True, exist_ok=True)
        self._set("", "schemata", self._full_schemata())
        for domain in range(domains):
            write_tree(root, {"/%s/mon_data/mon_L3_%02d/llc_occupancy" % (RESCTRL, domain): "1048576\n",
                              "/%s/mon_data/mon_L3_%02d/mbm_total_bytes" % (RESCTRL, domain): "Unavailable\n"})

    def install(self, monkeypatch):
        monkeypatch.setattr(_knobs, "write_knob", self.write)
        monkeypatch.setattr(_resctrl, "make_group", self.mkdir)
        monkeypatch.setattr(_resctrl, "remove_group", self.rmdir)
        return self

    def _full_schemata(self):
        ids = range(self.domains)
        return "L3:%s\nMB:%s\n" % (";".join("%d=%s" % (d, self.cache_full) for d in ids),
                                   ";".join("%d=%s" % (d, self.mb_full) for d in ids))

    def _path(self, group, name=""):
        return self.root / RESCTRL / group / name if group else self.root / RESCTRL / name

    def _set(self, group, name, text):
        self._path(group, name).write_text(text)

    def read(self, group, name):
        return self._path(group, name).read_text()

    def mkdir(self, root, name):
        self._path(name).mkdir()
        self._set(name, "tasks", "")
        if "/mon_groups/" not in "/" + name:
            self._set(name, "schemata", self._full_schemata())
            self._set(name, "cpus_list", "\n")
            (self._path(name) / "mon_groups").mkdir()

    def rmdir(self, root, name):
        moved = self.read(name, "tasks").split()
        shutil.rmtree(self._path(name))
        self._set("", "tasks", "\n".join(self.read("", "tasks").split() + moved) + "\n")

    def write(self, root, relative, value):
        path = relative.lstrip("/")[len(RESCTRL) + 1:]
        group, _sep, name = path.rpartition("/")
        value = str(value)
        if name == "schemata":
            if self.refuse and self.refuse[0] in value:
                self._set("info", "last_cmd_status", self.refuse[1] + "\n")
                raise _knobs.KnobError("cannot write /%s: Invalid argument" % relative.lstrip("/"))
            self._set("info", "last_cmd_status", "ok\n")
            resource, domains = value.strip().split(":", 1)
            if resource.startswith("L"):  # the kernel prints masks zero-padded to the cache's width
                width = len(self.cache_full)
                domains = ";".join("%s=%0*x" % (d, width, int(v, 16)) for d, v in (x.split("=") for x in domains.split(";")))
            lines = [line for line in self.read(group, "schemata").splitlines() if not line.startswith(resource + ":")]
            self._set(group, "schemata", "\n".join(sorted(lines + ["%s:%s" % (resource, domains)])) + "\n")
        elif name == "tasks":
            # a control group's tasks file lists its monitoring groups' tasks too (same CLOSID)
            control = group.split("/mon_groups/")[0] if "/mon_groups/" in "/" + group else group
            control = "" if group.startswith("mon_groups/") else control
            top = self.root / RESCTRL
            others = [""] + [str(p.relative_to(top).parent) for p in top.rglob("tasks") if p.parent != top]
            for other in others:
                if other not in (group, control) and self._path(other, "tasks").exists():
                    self._set(other, "tasks", "\n".join(t for t in self.read(other, "tasks").split() if t != value) + "\n")
            for target in sorted({group, control}):
                if value not in self.read(target, "tasks").split():
                    self._set(target, "tasks", "\n".join(self.read(target, "tasks").split() + [value]) + "\n")
        else:
            self._set(group, name, value)


def intel_xeon(root):
    """cbm_mask fff, min_cbm_bits 1, MB 10-100 in steps of 10, 2 cache ids."""
    return FakeResctrl(root, "GenuineIntel", 2, "fff", "100", {
        "L3": {"cbm_mask": "fff", "min_cbm_bits": 1, "num_closids": 4, "shareable_bits": "0",
               "bit_usage": "0=SSSSSSSSSSSS;1=SSSSSSSSSSSS"},
        "MB": {"min_bandwidth": 10, "bandwidth_gran": 10, "num_closids": 4, "delay_linear": 1},
        "L3_MON": {"num_rmids": 32, "mon_features": "llc_occupancy\nmbm_total_bytes"},
    })


def amd_epyc(root):
    """cbm_mask ffff, min_cbm_bits 0, sparse masks, 8 cache ids, MB in 1/8 GB/s up to 2048."""
    return FakeResctrl(root, "AuthenticAMD", 8, "ffff", "2048", {
        "L3": {"cbm_mask": "ffff", "min_cbm_bits": 0, "num_closids": 16, "shareable_bits": "0", "sparse_masks": 1,
               "bit_usage": ";".join("%d=%s" % (d, "X" + "S" * 15) for d in range(8))},
        "MB": {"min_bandwidth": 0, "bandwidth_gran": 1, "num_closids": 16, "delay_linear": "u"},
    })
