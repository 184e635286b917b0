"""After a reboot, the values come back from the drop-ins alone."""

THP = "/sys/kernel/mm/transparent_hugepage"


def test_thp_selection_survived_the_reboot(host):
    assert "[madvise]" in host.file(THP + "/enabled").content_string
    assert "[never]" in host.file(THP + "/defrag").content_string
    assert host.file(THP + "/khugepaged/defrag").content_string.strip() == "0"


def test_perf_event_paranoid_survived_the_reboot(host):
    assert host.file("/proc/sys/kernel/perf_event_paranoid").content_string.strip() == "2"


def test_dropins_record_values_and_the_original_level(host):
    tmpfiles = host.file("/etc/tmpfiles.d/cpuinfer-thp.conf").content_string
    assert "w /sys/kernel/mm/transparent_hugepage/defrag - - - - never" in tmpfiles
    sysctl = host.file("/etc/sysctl.d/90-cpuinfer-perf-paranoid.conf").content_string
    assert "kernel.perf_event_paranoid = 2" in sysctl
    assert "# original level: 3" in sysctl  # Debian's kernel boots with 3


def test_the_host_really_rebooted(host):
    with host.sudo():
        before = host.file("/root/boot_id.before-reboot").content_string.strip()
    now = host.file("/proc/sys/kernel/random/boot_id").content_string.strip()
    assert before and now and before != now
