"""host_tuning's record and drift report, from the modules' own check-mode readings of a fake host."""

import pytest

from ansible.errors import AnsibleFilterError

from ansible_collections.cpuinfer.llm.plugins.plugin_utils._filter_tuning import tuning_record, tuning_record_kept, tuning_settings
from ansible_collections.cpuinfer.llm.plugins.modules import perf_paranoid, sysctl, thp

from kernel_tree import snapshot, thp_tree, write_tree

SYSCTLS = {"kernel.sched_rt_runtime_us": 950000, "kernel.numa_balancing": 0}
PLAN = {"split": True, "housekeeping": "0", "inference": "1"}
SLICE = "cpuinfer-inference.slice"


@pytest.fixture
def host(tmp_path):
    """THP 'always' (brackets as the kernel shows them), perf 2, RT throttling off, no NUMA balancing knob."""
    thp_tree(tmp_path)
    write_tree(tmp_path, {"/proc/sys/kernel/perf_event_paranoid": "2\n",
                          "/proc/sys/kernel/sched_rt_runtime_us": "-1\n"})
    return tmp_path


def check(run_module, module, args, root):
    failed, result = run_module(module, dict(args, root=str(root)), check=True)
    assert not failed, result
    return result


def readings(run_module, root):
    return (check(run_module, thp, {"enabled": "madvise", "defrag": "never"}, root),
            check(run_module, perf_paranoid, {"level": 2}, root),
            check(run_module, sysctl, {"values": SYSCTLS}, root))


def test_the_record_holds_what_the_modules_read_before_any_write(host, run_module):
    before = snapshot(host)
    thp_check, dummy_perf, sysctl_check = readings(run_module, host)
    record = tuning_record(thp_check, sysctl_check)
    assert snapshot(host) == before
    assert record["format"] == 2
    assert record["thp"] == {"enabled": thp_check["before"]["enabled"], "defrag": thp_check["before"]["defrag"]}
    assert "[" not in record["thp"]["enabled"]  # the module parsed the kernel's brackets
    assert record["sysctls"] == {"kernel.sched_rt_runtime_us": "-1"}  # a key the kernel lacks is not recorded
    assert tuning_record_kept(record) == record


def test_a_record_of_the_first_format_reads_the_same():
    first = {"/sys/kernel/mm/transparent_hugepage/enabled": "always",
             "/sys/kernel/mm/transparent_hugepage/defrag": "madvise",
             "/proc/sys/kernel/perf_event_paranoid": "3",
             "/proc/sys/kernel/sched_rt_runtime_us": "-1"}
    assert tuning_record_kept(first) == {"format": 2, "thp": {"enabled": "always", "defrag": "madvise"},
                                         "sysctls": {"kernel.sched_rt_runtime_us": "-1"}}
    with pytest.raises(AnsibleFilterError, match="not a sysctl path"):
        tuning_record_kept({"/proc/sys/Bad/Key": "1"})


def test_drift_is_every_setting_the_modules_would_change_and_only_those(host, run_module):
    thp_check, perf_check, sysctl_check = readings(run_module, host)
    rows = tuning_settings(thp_check, perf_check, sysctl_check,
                           {"system.slice": "0", "user.slice": "", SLICE: "1"}, PLAN, SLICE)
    by_setting = {row["setting"]: row for row in rows}
    assert [row["setting"] for row in rows] == sorted(by_setting)
    drifted = sorted(row["setting"] for row in rows if not row["in_sync"])
    assert drifted == ["/proc/sys/kernel/sched_rt_runtime_us", "/sys/kernel/mm/transparent_hugepage/defrag",
                       "/sys/kernel/mm/transparent_hugepage/enabled", "user.slice AllowedCPUs"]
    assert by_setting["/proc/sys/kernel/sched_rt_runtime_us"]["actual"] == "-1"
    assert by_setting["/proc/sys/kernel/sched_rt_runtime_us"]["wanted"] == "950000"
    assert by_setting["/proc/sys/kernel/perf_event_paranoid"] == {
        "setting": "/proc/sys/kernel/perf_event_paranoid", "wanted": "2", "actual": "2", "in_sync": True}
    assert by_setting["user.slice AllowedCPUs"]["wanted"] == "0"
    assert "/proc/sys/kernel/numa_balancing" not in by_setting  # this kernel has no such knob


def test_systemctl_shows_every_slice_in_one_text_in_its_own_property_order(host, run_module):
    thp_check, perf_check, sysctl_check = readings(run_module, host)
    # systemd prints the properties in its own order, and an unset AllowedCPUs as empty
    shown = "AllowedCPUs=0\nId=system.slice\n\nId=user.slice\nAllowedCPUs=\n\nAllowedCPUs=1\nId=%s\n" % SLICE
    as_text = tuning_settings(thp_check, perf_check, sysctl_check, shown, PLAN, SLICE)
    as_dict = tuning_settings(thp_check, perf_check, sysctl_check, {"system.slice": "0", "user.slice": "", SLICE: "1"},
                              PLAN, SLICE)
    assert as_text == as_dict
    assert [r["setting"] for r in as_text if not r["in_sync"] and r["setting"].endswith("AllowedCPUs")] == [
        "user.slice AllowedCPUs"]
    with pytest.raises(AnsibleFilterError, match="no Id="):
        tuning_settings(thp_check, perf_check, sysctl_check, "AllowedCPUs=0\n", PLAN, SLICE)


def test_an_unsplit_host_wants_unconfined_slices_and_irqs_report_where_they_are(host, run_module):
    thp_check, perf_check, sysctl_check = readings(run_module, host)
    unsplit = {"split": False, "housekeeping": "0", "inference": "0"}
    rows = tuning_settings(thp_check, perf_check, sysctl_check, {"system.slice": "", SLICE: "0"}, unsplit, SLICE)
    assert {r["setting"]: r["wanted"] for r in rows if r["setting"].endswith("AllowedCPUs")} == {
        "system.slice AllowedCPUs": "", SLICE + " AllowedCPUs": "0"}
    irq = {"changed": True, "moved": [24, 28], "before": {"default": "0-1"}}
    row = [r for r in tuning_settings(thp_check, perf_check, sysctl_check, {}, PLAN, SLICE, irq)
           if r["setting"] == "IRQ affinity"][0]
    assert row == {"setting": "IRQ affinity", "wanted": "0", "actual": "elsewhere: IRQs 24,28, default 0-1",
                   "in_sync": False}
    settled = tuning_settings(thp_check, perf_check, sysctl_check, {}, PLAN, SLICE, {"changed": False, "moved": []})
    assert [r["in_sync"] for r in settled if r["setting"] == "IRQ affinity"] == [True]


def test_something_that_is_not_a_module_result_is_named():
    with pytest.raises(AnsibleFilterError, match="thp must be a module result"):
        tuning_settings({"enabled": "x"}, {}, {}, {}, PLAN, SLICE)


def test_isolation_row_compares_the_running_kernels_nohz_full():
    from ansible_collections.cpuinfer.llm.plugins.plugin_utils._filter_tuning import tuning_settings
    thp = {"before": {}, "after": {}}
    perf = {"previous": 2, "level": 2}
    sysctl = {"before": {}, "after": {}}
    plan = {"split": True, "housekeeping": "0", "inference": "1"}
    rows = tuning_settings(thp, perf, sysctl, {}, plan, "x.slice", None, {"wanted": "1", "running": ""})
    row = [r for r in rows if r["setting"] == "/sys/devices/system/cpu/nohz_full"][0]
    assert row == {"setting": "/sys/devices/system/cpu/nohz_full", "wanted": "1", "actual": "", "in_sync": False}
    rows = tuning_settings(thp, perf, sysctl, {}, plan, "x.slice", None, {"wanted": "", "running": None})
    assert not [r for r in rows if "nohz" in r["setting"]]  # no NO_HZ_FULL, none wanted: nothing to say
    rows = tuning_settings(thp, perf, sysctl, {}, plan, "x.slice", None, {"wanted": "1", "running": None})
    assert [r["actual"] for r in rows if "nohz" in r["setting"]] == ["unsupported: kernel without NO_HZ_FULL"]


def test_tuned_rows_where_tuned_runs():
    from ansible_collections.cpuinfer.llm.plugins.plugin_utils._filter_tuning import tuning_settings
    args = ({"before": {}, "after": {}}, {"previous": 2, "level": 2}, {"before": {}, "after": {}}, {},
            {"split": False, "housekeeping": "0", "inference": "0"}, "x.slice", None, None)
    rows = dict((r["setting"], r) for r in tuning_settings(*args, {"active_profile": "virtual-guest", "verify_rc": 1}))
    assert rows["tuned active profile"]["actual"] == "virtual-guest" and not rows["tuned active profile"]["in_sync"]
    assert rows["tuned-adm verify"]["actual"].startswith("failed (exit 1")
    rows = dict((r["setting"], r) for r in tuning_settings(*args, {"active_profile": "cpuinfer", "verify_rc": 0}))
    assert rows["tuned active profile"]["in_sync"] and rows["tuned-adm verify"]["in_sync"]
    assert "tuned-adm verify" not in [r["setting"] for r in tuning_settings(*args)]


def test_verify_reads_by_name_and_a_skipped_reading_adds_no_row():
    from ansible_collections.cpuinfer.llm.plugins.plugin_utils._filter_tuning import tuning_settings_of
    skipped = {"changed": False, "skipped": True, "skip_reason": "Conditional result was False"}
    readings = {"thp": {"before": {}, "after": {}}, "perf": {"previous": 2, "level": 2},
                "sysctl": {"before": {}, "after": {}}, "slices_now": {}, "plan": PLAN, "inference_slice": SLICE,
                "irq": skipped, "isolation": {"mode": "nohz", "isolcpus_flags": [], "running": "1"},
                "tuned": {"active_profile": None, "verify": skipped}}
    rows = {r["setting"]: r for r in tuning_settings_of(readings)}
    assert "IRQ affinity" not in rows and "tuned-adm verify" not in rows
    # nohz's CPUs are the plan's inference CPUs, derived as the converge derives them
    assert rows["/sys/devices/system/cpu/nohz_full"] == {"setting": "/sys/devices/system/cpu/nohz_full", "wanted": "1",
                                                         "actual": "1", "in_sync": True}
    ran = dict(readings, irq={"changed": True, "moved": [5], "before": {"default": "0-1"}},
               isolation={"mode": "none", "running": None},
               tuned={"active_profile": "cpuinfer", "verify": {"rc": 2, "changed": False}})
    rows = {r["setting"]: r for r in tuning_settings_of(ran)}
    assert not rows["IRQ affinity"]["in_sync"] and rows["tuned-adm verify"]["actual"].startswith("failed (exit 2")
    assert "/sys/devices/system/cpu/nohz_full" not in rows
    with pytest.raises(AnsibleFilterError, match="readings lack plan, inference_slice"):
        tuning_settings_of({"thp": {}, "perf": {}, "sysctl": {}, "slices_now": {}})
