from pathlib import Path

"""One fake host per module: a kernel tree with the kernel's write semantics where they matter.
Each builder takes (root, monkeypatch) and leaves a host that a valid request can converge."""

from fake_cgroup import FakeCgroupKernel
from fake_irq import FakeIrqKernel
from fake_resctrl import intel_xeon
from kernel_tree import FakeThpKernel, perf_tree, write_tree


def thp_host(root, monkeypatch):
    FakeThpKernel(root).install(monkeypatch)
    write_tree(root, {"/run/systemd/system/.keep": ""})


def perf_host(root, monkeypatch):
    perf_tree(root)


def cgroup_host(root, monkeypatch):
    kernel = FakeCgroupKernel(root, cpus="0-3", nodes="0").install(monkeypatch)
    kernel.delegated_unit(pids=())
    kernel.spawn(4242, "", comm="llama")
    write_tree(root, {"/proc/2/stat": "2 (kthreadd) S 0 0 0 0 -1 2129984 0", "/proc/2/cgroup": "0::/\n"})


def rdt_host(root, monkeypatch):
    intel_xeon(root).install(monkeypatch)


def irq_host(root, monkeypatch):
    FakeIrqKernel(root, monkeypatch)


def sched_host(root, monkeypatch):
    stat = "100 (llama-server) S 1 100 100 0 -1 4194560" + " 0" * 10 + " 20 0 2 0 5 0" + " 0" * 20 + " 0 0"
    write_tree(root, {
        "/proc/sys/kernel/sched_rt_runtime_us": "950000\n",
        "/proc/100/stat": stat, "/proc/100/comm": "llama-server\n",
        "/proc/100/task/100/stat": stat, "/proc/100/task/100/comm": "llama-server\n",
        "/proc/1/stat": "1 (systemd) S 0 1 1 0 -1 4194560", "/proc/1/comm": "systemd\n",
        "/proc/1/task/1/stat": "1 (systemd) S 0 1 1 0 -1 4194560",
        "/proc/2/stat": "2 (kthreadd) S 0 0 0 0 -1 2129984", "/proc/2/comm": "kthreadd\n",
        "/sys/fs/cgroup/system.slice/llama.service/cgroup.procs": "100\n",
    })


def sysctl_host(root, monkeypatch):
    write_tree(root, {
        "/proc/sys/kernel/sched_rt_runtime_us": "950000\n",
        "/proc/sys/kernel/sched_rt_period_us": "1000000\n",
        "/proc/sys/kernel/numa_balancing": "1\n",
    })


def files_host(root, monkeypatch):
    write_tree(root, {"/etc/systemd/system/existing.service": "[Service]\n"})
    (Path(root) / "etc" / "demo.d").mkdir(parents=True)


def kernel_host(root, monkeypatch):
    """THP, perf_event_paranoid and sysctls on one host: what kernel_settings converges."""
    thp_host(root, monkeypatch)
    perf_tree(root)
    sysctl_host(root, monkeypatch)
