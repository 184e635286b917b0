import pytest

from ansible.errors import AnsibleFilterError

from ansible_collections.cpuinfer.llm.plugins.plugin_utils._filter_gate import gate_verdicts

LIMITS = (0.5, 5000, 0.9, 1.25)


def _m(rate, p99):
    return {"tokens_per_second": rate, "p99_ms": p99}


def _one(measured, baseline, expected=("tiny",)):
    return {v["name"]: v for v in gate_verdicts(measured, baseline, list(expected), *LIMITS)}


def test_a_host_that_kept_its_rate_passes():
    verdict = _one({"tiny": _m(9.5, 120)}, {"tiny": _m(10, 110)})["tiny"]
    assert verdict["passed"] and "baseline 10 tokens/s" in verdict["reason"]


def test_a_rate_below_the_share_of_its_baseline_fails_even_above_the_floor():
    verdict = _one({"tiny": _m(8.9, 100)}, {"tiny": _m(10, 100)})["tiny"]
    assert not verdict["passed"] and "below 0.90 x its baseline" in verdict["reason"]


def test_a_p99_beyond_the_multiple_of_its_baseline_fails():
    verdict = _one({"tiny": _m(10, 126)}, {"tiny": _m(10, 100)})["tiny"]
    assert not verdict["passed"] and "p99 above 1.25 x its baseline" in verdict["reason"]


def test_without_a_baseline_only_the_floors_hold():
    assert _one({"tiny": _m(0.6, 4000)}, {})["tiny"]["passed"]
    verdict = _one({"tiny": _m(0.4, 6000)}, {})["tiny"]
    assert not verdict["passed"] and "below the floor" in verdict["reason"] and "above the ceiling" in verdict["reason"]


def test_an_expected_instance_that_does_not_run_fails():
    verdicts = _one({}, {"tiny": _m(10, 100)})
    assert not verdicts["tiny"]["passed"] and "not running" in verdicts["tiny"]["reason"]


def test_every_measured_instance_is_judged_expected_or_not():
    verdicts = _one({"tiny": _m(10, 100), "extra": _m(0.1, 100)}, {})
    assert verdicts["tiny"]["passed"] and not verdicts["extra"]["passed"]


def test_a_zero_baseline_p99_does_not_make_every_p99_fail():
    assert _one({"tiny": _m(10, 50)}, {"tiny": _m(10, 0)})["tiny"]["passed"]


@pytest.mark.parametrize("measured, baseline", [([], {}), ({}, "x"), ({"tiny": _m("fast", 1)}, {})])
def test_malformed_input_is_a_clear_error(measured, baseline):
    with pytest.raises(AnsibleFilterError, match="gate_verdicts"):
        gate_verdicts(measured, baseline, ["tiny"], *LIMITS)
