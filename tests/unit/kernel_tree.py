"""Build and compare fake kernel trees (sysfs, procfs, /etc) for unit tests."""

import os
import stat
from pathlib import Path


def write_tree(root, files):
    """Create files under root: {'/sys/a/b': 'text'}."""
    for relative, content in files.items():
        path = Path(root) / relative.lstrip("/")
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(content)


def snapshot(root):
    """Every file under root with its content, to assert that nothing was written."""
    return {str(p.relative_to(root)): p.read_text() for p in sorted(Path(root).rglob("*")) if p.is_file()}


def full_snapshot(root):
    """Every entry under root, directories and links too, with its bytes (a link: its target), mode and
    owner: what "the tree is as before" means to an operator. Links are not followed."""
    entries = {}
    for directory, dirnames, filenames in os.walk(str(root)):
        for name in dirnames + filenames:
            path = os.path.join(directory, name)
            info = os.lstat(path)
            if stat.S_ISLNK(info.st_mode):
                body = os.readlink(path).encode()
            elif stat.S_ISREG(info.st_mode):
                with open(path, "rb") as handle:
                    body = handle.read()
            else:
                body = b""
            entries[os.path.relpath(path, str(root))] = (stat.S_IFMT(info.st_mode), stat.S_IMODE(info.st_mode),
                                                         info.st_uid, info.st_gid, body)
    return entries


THP = "/sys/kernel/mm/transparent_hugepage"


def thp_tree(root, enabled="[always] madvise never", defrag="always defer defer+madvise [madvise] never"):
    """A THP sysfs tree as Debian 12's kernel shows it."""
    write_tree(root, {
        THP + "/enabled": enabled + "\n",
        THP + "/defrag": defrag + "\n",
        THP + "/khugepaged/defrag": "1\n",
        THP + "/khugepaged/pages_to_scan": "4096\n",
        THP + "/khugepaged/scan_sleep_millisecs": "10000\n",
        THP + "/khugepaged/alloc_sleep_millisecs": "60000\n",
        THP + "/khugepaged/max_ptes_none": "511\n",
    })


def perf_tree(root, level=3, release="6.1.0-50-cloud-amd64", restrict_patch=True):
    """procfs sysctl and /boot config of a Debian-like kernel (with or without the perf patch)."""
    config = "CONFIG_PERF_EVENTS=y\n"
    if restrict_patch:
        config += "CONFIG_SECURITY_PERF_EVENTS_RESTRICT=y\n"
    write_tree(root, {
        "/proc/sys/kernel/perf_event_paranoid": "%d\n" % level,
        "/proc/sys/kernel/osrelease": release + "\n",
        "/boot/config-" + release: config,
    })


CPU = "/sys/devices/system/cpu"
X86_FLAGS = "fpu sse4_2 avx avx2 fma f16c bmi2 avx512f avx512bw avx512vl avx512_vnni cat_l3 cdp_l3 mba cqm_llc rdt_a"
KUNPENG_FEATURES = "fp asimd evtstrm aes pmull sha1 sha2 crc32 atomics fphp asimdhp cpuid asimdrdm jscvt fcma dcpop asimddp asimdfhm"
PHYTIUM_FEATURES = "fp asimd evtstrm aes pmull sha1 sha2 crc32 cpuid"


def cpu_tree(root, sockets, cores_per_socket, threads_per_core, nodes_per_socket=1, cpuinfo_block=None,
             midr=None, l3_per_socket=1, cgroup="cgroup2", controllers="cpuset cpu io memory hugetlb pids"):
    """A host's /proc and /sys as the facts module reads them; CPU n = thread t of core c of socket s
    numbered as Linux does on x86 (threads of a core are n and n + ncores)."""
    cores_total = sockets * cores_per_socket
    logical = cores_total * threads_per_core
    files = {}
    blocks = []
    for cpu in range(logical):
        core_global = cpu % cores_total
        socket = core_global // cores_per_socket
        core = core_global % cores_per_socket
        siblings = [core_global + t * cores_total for t in range(threads_per_core)]
        base = "%s/cpu%d" % (CPU, cpu)
        files[base + "/topology/physical_package_id"] = "%d\n" % socket
        files[base + "/topology/core_id"] = "%d\n" % core
        files[base + "/topology/thread_siblings_list"] = ",".join(map(str, siblings)) + "\n"
        files[base + "/cache/index0/level"] = "1\n"
        files[base + "/cache/index0/type"] = "Data\n"
        files[base + "/cache/index0/size"] = "48K\n"
        files[base + "/cache/index0/shared_cpu_list"] = ",".join(map(str, siblings)) + "\n"
        per_l3 = cores_per_socket // l3_per_socket
        l3 = core // per_l3
        first = socket * cores_per_socket + l3 * per_l3
        l3_cores = range(first, first + per_l3)
        l3_cpus = sorted(c + t * cores_total for c in l3_cores for t in range(threads_per_core))
        files[base + "/cache/index3/level"] = "3\n"
        files[base + "/cache/index3/type"] = "Unified\n"
        files[base + "/cache/index3/size"] = "32768K\n"
        files[base + "/cache/index3/shared_cpu_list"] = ",".join(map(str, l3_cpus)) + "\n"
        if midr is not None:
            files[base + "/regs/identification/midr_el1"] = "0x%016x\n" % midr
        blocks.append("processor\t: %d\n%s\n" % (cpu, cpuinfo_block or ""))
    files[CPU + "/online"] = "0-%d\n" % (logical - 1)
    nodes = sockets * nodes_per_socket
    cores_per_node = cores_total // nodes
    for node in range(nodes):
        node_cpus = [c + t * cores_total for c in range(node * cores_per_node, (node + 1) * cores_per_node)
                     for t in range(threads_per_core)]
        files["/sys/devices/system/node/node%d/cpulist" % node] = ",".join(map(str, sorted(node_cpus))) + "\n"
    files["/proc/cpuinfo"] = "\n".join(blocks)
    mounts = "proc /proc proc rw 0 0\nsysfs /sys sysfs rw 0 0\n"
    if cgroup == "cgroup2":
        mounts += "cgroup2 /sys/fs/cgroup cgroup2 rw,nsdelegate 0 0\n"
    elif cgroup == "hybrid":
        mounts += "tmpfs /sys/fs/cgroup tmpfs ro 0 0\ncgroup2 /sys/fs/cgroup/unified cgroup2 rw 0 0\n"
        mounts += "cgroup /sys/fs/cgroup/cpu,cpuacct cgroup rw,cpu,cpuacct 0 0\n"
    else:
        mounts += "cgroup /sys/fs/cgroup/memory cgroup rw,memory 0 0\n"
    files["/proc/mounts"] = mounts
    files["/proc/filesystems"] = "nodev\tsysfs\nnodev\tcgroup2\n\text4\n"
    files["/sys/fs/cgroup/cgroup.controllers"] = controllers + "\n"
    write_tree(root, files)


def xeon_tree(root, **kwargs):
    block = ("vendor_id\t: GenuineIntel\nmodel name\t: Intel(R) Xeon(R) Silver 4314 CPU @ 2.40GHz\n"
             "flags\t\t: %s" % X86_FLAGS)
    cpu_tree(root, sockets=2, cores_per_socket=16, threads_per_core=2, cpuinfo_block=block, **kwargs)


def kunpeng_tree(root, **kwargs):
    block = ("BogoMIPS\t: 200.00\nFeatures\t: %s\nCPU implementer\t: 0x48\nCPU architecture: 8\n"
             "CPU variant\t: 0x1\nCPU part\t: 0xd01\nCPU revision\t: 0" % KUNPENG_FEATURES)
    cpu_tree(root, sockets=2, cores_per_socket=64, threads_per_core=1, nodes_per_socket=2, l3_per_socket=2,
             cpuinfo_block=block, midr=0x481FD010, **kwargs)


def phytium_tree(root, **kwargs):
    block = ("Features\t: %s\nCPU implementer\t: 0x70\nCPU architecture: 8\nCPU variant\t: 0x1\n"
             "CPU part\t: 0x662\nCPU revision\t: 2" % PHYTIUM_FEATURES)
    cpu_tree(root, sockets=1, cores_per_socket=64, threads_per_core=1, nodes_per_socket=8, l3_per_socket=8,
             cpuinfo_block=block, **kwargs)


class FakeThpKernel:
    """THP sysfs with the kernel's write semantics: a selection reads back bracketed, a value the
    kernel does not take is refused with EINVAL (khugepaged knobs are unsigned ints; pages_to_scan
    must be positive; max_ptes_none at most 511)."""

    CHOICES = {"enabled": "always madvise never", "defrag": "always defer defer+madvise madvise never"}

    def __init__(self, root):
        self.root = root
        thp_tree(root)

    def install(self, monkeypatch):
        from ansible_collections.cpuinfer.llm.plugins.module_utils import _knobs

        real = _knobs.write_knob

        def write(root, relative, value):
            name = relative.rsplit("/", 1)[-1]
            text = str(value)
            if relative.endswith(tuple("/" + k for k in self.CHOICES)) and "khugepaged" not in relative:
                if text not in self.CHOICES[name].split():
                    raise _knobs.KnobError("cannot write %s: Invalid argument" % relative, 22)
                text = " ".join("[%s]" % c if c == text else c for c in self.CHOICES[name].split())
            elif "/khugepaged/" in relative:
                limit = {"max_ptes_none": 511, "defrag": 1}.get(name, 2 ** 32 - 1)
                low = 1 if name == "pages_to_scan" else 0
                if not text.isascii() or not text.isdigit() or not low <= int(text) <= limit:
                    raise _knobs.KnobError("cannot write %s: Invalid argument" % relative, 22)
            real(root, relative, text)

        monkeypatch.setattr(_knobs, "write_knob", write)
        return self
