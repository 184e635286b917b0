import pytest

from ansible.errors import AnsibleFilterError
from ansible_collections.cpuinfer.llm.plugins.plugin_utils._filter_isolation import cpumask_hex, isolation_cmdline

PLAN = {"split": True, "housekeeping": "0,8", "inference": "1-7,9-15"}


def test_nohz_keeps_tick_rcu_and_interrupts_off_the_inference_cpus():
    assert isolation_cmdline(PLAN, "nohz") == {"nohz_full": "1-7,9-15", "rcu_nocbs": "1-7,9-15", "irqaffinity": "0,8"}


def test_isolcpus_only_with_flags_and_only_known_ones():
    assert isolation_cmdline(PLAN, "nohz", ["managed_irq", "domain"])["isolcpus"] == "managed_irq,domain,1-7,9-15"
    with pytest.raises(AnsibleFilterError, match="isolcpus flags bogus unknown"):
        isolation_cmdline(PLAN, "nohz", ["bogus"])


def test_none_and_an_unsplit_host_get_nothing():
    assert isolation_cmdline(PLAN, "none") == {}
    assert isolation_cmdline({"split": False, "housekeeping": "0", "inference": "0"}, "nohz") == {}
    with pytest.raises(AnsibleFilterError, match="mode must be one of none, nohz"):
        isolation_cmdline(PLAN, "full")


@pytest.mark.parametrize("cpus, mask", [("0", "1"), ("0-1,4", "13"), ("0,32", "1,00000001"), ("63", "80000000,00000000")])
def test_cpumask_hex_as_the_kernel_prints_masks(cpus, mask):
    assert cpumask_hex(cpus) == mask


def test_absent_knobs_of_a_vm_are_named_with_why():
    from ansible_collections.cpuinfer.llm.plugins.plugin_utils._filter_isolation import absent_knobs
    vm = {"cpufreq_governor": None, "cpufreq_epp": None, "cpuidle_driver": None, "isolation": {"nohz_full": ""}}
    absent = absent_knobs(vm, "performance", "performance", 2, "nohz")
    assert [a.split(":")[0] for a in absent] == [
        "cpufreq governor performance", "energy/performance preference performance", "idle-state exit latency <= 2 us"]
    hardware = {"cpufreq_governor": "powersave", "cpufreq_epp": "balance_power", "cpuidle_driver": "intel_idle",
                "isolation": {"nohz_full": None}}
    assert absent_knobs(hardware, "performance", "performance", 2, "none") == []
    assert absent_knobs(hardware, isolation="nohz") == ["isolation nohz: the kernel was built without NO_HZ_FULL"]
