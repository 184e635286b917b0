import pytest

from ansible_collections.cpuinfer.llm.plugins.module_utils import _rdt_plan as plan

XEON_L3 = {"cbm_mask": 0xFFF, "min_cbm_bits": 2, "shareable_bits": 0x800, "bit_usage": "0=EXXSSSSSSSSS;1=SSSSSSSSSSSS"}
XEON_MB = {"min_bandwidth": 10, "bandwidth_gran": 10}
INFO = {"L3": XEON_L3, "MB": XEON_MB}
DEFAULT = {"L3": {"0": "fff", "1": "fff"}, "MB": {"0": "100", "1": "100"}}


def _check_cache(text, domain="1", entry=None):
    problems, warnings = [], []
    entry = XEON_L3 if entry is None else entry
    return plan.check_cache("L3", domain, text, entry, problems, warnings), problems, warnings


def test_a_good_mask_is_made_canonical():
    assert _check_cache("0x0F0") == ("f0", [], [])


@pytest.mark.parametrize("text, problem", [
    (255, "is a number, not a hex mask"), ("zz", "is not a hex mask"), ("1000", "bits outside cbm_mask fff"),
    ("1", "fewer than min_cbm_bits=2"), ("f0f", "not contiguous"),
])
def test_a_bad_mask_is_explained(text, problem):
    canonical, problems, dummy = _check_cache(text)
    assert problem in "\n".join(problems)
    if problem.startswith("is"):
        assert canonical is None


def test_bits_other_groups_or_hardware_hold():
    dummy, problems, warnings = _check_cache("c00", domain="0")
    assert any("bit 11 is exclusive by another group" in p for p in problems)
    assert any("overlaps shareable_bits 800" in w for w in warnings)
    assert any("bit 10 is also used by hardware" in w for w in warnings)
    assert _check_cache("ff", entry=dict(XEON_L3, sparse_masks=1, min_cbm_bits=1))[1] == []


@pytest.mark.parametrize("value, amd_max, mbps, problem", [
    (5, None, False, "outside 10..100"), (55, None, False, "not a multiple of bandwidth_gran 10"),
    (0, 2048, False, "outside 1..2048"), (0, None, True, "at least 1"), (True, None, False, "not a whole number"),
])
def test_memory_bandwidth_rules_for_intel_amd_and_mbps(value, amd_max, mbps, problem):
    problems = []
    plan.check_mb("0", value, XEON_MB, amd_max, mbps, problems)
    assert problem in problems[0]


def test_wanted_schemata_keeps_unrequested_domains_and_lists_problems():
    problems, warnings = [], []
    wanted = plan.wanted_schemata({"L3": {"1": "0ff"}, "MB": 50, "L2": "f", "XX": 1}, INFO, DEFAULT,
                                  {"L3": {"0": "fff", "1": "fff"}}, False, False, problems, warnings)
    assert wanted == {"L3": {"0": "fff", "1": "ff"}, "MB": {"0": "50", "1": "50"}}
    assert any("does not offer L2" in p for p in problems) and any("unknown resource 'XX'" in p for p in problems)
    problems = []
    plan.wanted_schemata({"L3": {"7": "f"}}, INFO, DEFAULT, {}, False, False, problems, [])
    assert problems == ["L3 has no domain 7 (domains: 0, 1)"]


def test_masks_compare_as_numbers():
    assert plan.normalised("L3", {"0": "00ff"}) == plan.normalised("L3", {"0": "ff"})
    assert plan.normalised("MB", {"0": "050"}) == {"0": "50"}


def test_monitor_groups_and_closids():
    problems = []
    assert plan.monitor_groups({"llama": [4242, "7"], "bad/name": [1], "x": "1"}, problems) == {"llama": [4242, 7]}
    assert len(problems) == 2
    assert plan.monitor_groups(None, []) == {}
    assert plan.closids_left({"L3": {"num_closids": 16}, "MB": {"num_closids": 8}}, 3) == 4


def test_render_is_stable():
    text = plan.render({"exists": True, "schemata": {"L3": {"10": "f", "2": "ff"}}, "cpus": "0-3", "tasks": 2})
    assert text == "exists = True\nL3 = 2=ff;10=f\ncpus = 0-3\ntasks = 2\n"
