"""After revert the host reads as it did before the first converge."""

import json

import pytest


def test_values_equal_the_pre_converge_snapshot(host):
    with host.sudo():
        before = json.loads(host.file("/root/pre-converge-snapshot.json").content_string)
        now = host.check_output(
            "cat /sys/kernel/mm/transparent_hugepage/enabled /sys/kernel/mm/transparent_hugepage/defrag "
            "/proc/sys/kernel/perf_event_paranoid /proc/sys/kernel/sched_rt_runtime_us /proc/sys/kernel/numa_balancing "
            "/proc/irq/default_smp_affinity"
        ).splitlines()
        slices = host.check_output("systemctl show --property=AllowedCPUs --value system.slice user.slice").splitlines()
    assert now + slices == before


@pytest.mark.parametrize("path", [
    "/etc/tmpfiles.d/cpuinfer-thp.conf",
    "/etc/sysctl.d/90-cpuinfer-perf-paranoid.conf",
    "/etc/sysctl.d/90-cpuinfer-tuning.conf",
    "/etc/systemd/system/system.slice.d/50-cpuinfer-housekeeping.conf",
    "/etc/systemd/system/user.slice.d/50-cpuinfer-housekeeping.conf",
    "/var/lib/cpuinfer/host_tuning_original.json",
    "/var/lib/cpuinfer/releases/llama_server.json",
    "/etc/systemd/system/cpuinfer-irq-affinity.service",
    "/usr/local/libexec/cpuinfer-irq-affinity.py",
    "/etc/default/grub.d/91-cpuinfer-isolation.cfg",
    "/etc/tmpfiles.d/cpuinfer-workqueue.conf",
    "/etc/systemd/system/cpuinfer-cpu-dma-latency.service",
    "/var/lib/cpuinfer/cpu-dma-latency-us",
])
def test_drop_ins_and_record_are_gone(host, path):
    assert not host.file(path).exists


def test_the_revert_rebooted_out_of_the_isolation(host):
    cmdline = host.file("/proc/cmdline").content_string.split()
    assert cmdline[0].startswith("BOOT_IMAGE="), cmdline  # booted by GRUB: its grub.cfg lost the arguments
    assert not [arg for arg in cmdline if arg.split("=")[0] in ("nohz_full", "rcu_nocbs", "irqaffinity", "isolcpus")]
    assert host.file("/sys/devices/system/cpu/nohz_full").content_string.strip() in ("", "(null)")
    with host.sudo():
        assert "nohz_full" not in host.file("/boot/grub/grub.cfg").content_string


def test_tuned_is_back_on_the_profile_it_ran_before(host):
    with host.sudo():
        assert host.check_output("tuned-adm active").strip() == "Current active profile: virtual-guest"
        assert host.run("tuned-adm verify").rc == 0
        assert not host.file("/etc/tuned/cpuinfer").exists
        assert not host.file("/var/lib/cpuinfer/tuned_previous_profile").exists


def test_no_latency_request_is_held_after_revert(host):
    with host.sudo():
        held = host.check_output("python3 -c \"import struct; print(struct.unpack('=i', open('/dev/cpu_dma_latency', 'rb').read(4))[0])\"")
    assert int(held) > 2, held  # the kernel's default (2000000000 us): no request
