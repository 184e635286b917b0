import pytest

from ansible.errors import AnsibleFilterError
from ansible_collections.cpuinfer.llm.plugins.plugin_utils._filter_tuned import tuned_profile


def test_the_profile_of_a_plan_is_marked_as_ours_and_includes_the_base():
    text = tuned_profile({"base": "virtual-guest", "thp": {"enabled": "madvise", "defrag": "never"},
                          "sysctls": {"kernel.numa_balancing": 0}, "governor": None})
    assert text.startswith("# Managed by cpuinfer.llm (cpuinfer.llm.host_tuning)")
    assert "include=virtual-guest" in text and "kernel.numa_balancing=0" in text and "[cpu]" not in text


def test_a_plan_without_thp_is_refused():
    with pytest.raises(AnsibleFilterError, match="needs a dict"):
        tuned_profile({"base": "x"})
    with pytest.raises(AnsibleFilterError, match="thp lacks 'defrag'"):
        tuned_profile({"thp": {"enabled": "madvise"}})
