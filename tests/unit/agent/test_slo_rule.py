"""The SLO controller's rule: cuts on violation and pressure, growth only with slack and time, core
lending after the quota fills BE's CPUs, the safe minimum when latency is unreadable."""

import pytest
from hypothesis import given, strategies as st

from cpuinfer_agent import slo_rule
from cpuinfer_agent.slo_rule import State

LIMITS = slo_rule.Limits(min_percent=20, step_percent=20, base_cpus=1, lendable_cores=[1, 2], psi_some_max=40.0,
                         min_interval=20)


@pytest.mark.parametrize("state, ratio, psi, since, expected", [
    (State(80, 0), 1.25, 0.0, 100, State(64, 0)),    # 1.25 x SLO: x0.8 (proportional 1/1.25 = 0.8)
    (State(80, 0), 1.1, 0.0, 0, State(64, 0)),       # a small breach still cuts at least 20 %, at once
    (State(80, 0), 4.0, 0.0, 100, State(40, 0)),     # far above: at most halved per window
    (State(300, 2), 1.5, 0.0, 100, State(100, 0)),   # every lent core back; the quota fits the base CPU
    (State(22, 0), 2.0, 0.0, 100, State(20, 0)),     # never below the safe minimum
    (State(80, 1), 0.9, 55.0, 100, State(64, 0)),    # pressure within the SLO: one core back, -20 %
    (State(40, 0), 0.5, 10.0, 100, State(60, 0)),    # slack 0.5: grow one step
    (State(40, 0), 0.5, 10.0, 5, State(40, 0)),      # ... but not sooner than min_interval
    (State(40, 0), 0.8, 10.0, 100, State(40, 0)),    # slack 0.2: inside the band, hold
    (State(90, 0), 0.5, None, 100, State(100, 0)),   # growth capped by BE's CPUs (one)
    (State(100, 0), 0.5, None, 100, State(100, 1)),  # at the cap: lend a core
    (State(200, 1), 0.5, None, 100, State(200, 2)),
    (State(400, 2), 0.5, None, 100, State(400, 2)),  # nothing left to lend
    (State(300, 2), None, 0.0, 100, State(20, 0)),   # unreadable: the safe minimum, nothing lent
])
def test_rule(state, ratio, psi, since, expected):
    new, reason = slo_rule.decide(state, ratio, psi, since, LIMITS)
    assert new == expected, reason
    assert reason


STATES = st.builds(lambda lent, fraction: State(max(20, int(LIMITS.cap(lent) * fraction)), lent),
                   st.integers(0, 2), st.floats(0, 1))


@given(STATES, st.one_of(st.none(), st.floats(0, 20)), st.one_of(st.none(), st.floats(0, 100)), st.floats(0, 1000))
def test_bounds_hold_for_any_reading(state, ratio, psi, since):
    new, dummy = slo_rule.decide(state, ratio, psi, since, LIMITS)
    assert LIMITS.min_percent <= new.quota_percent <= LIMITS.cap(new.lent_cores)
    assert 0 <= new.lent_cores <= len(LIMITS.lendable_cores)
    if ratio is None or ratio > 1.0:
        assert new.quota_percent <= max(state.quota_percent, LIMITS.min_percent) and new.lent_cores == 0
    if ratio is not None and ratio > 1.0:
        assert new.quota_percent <= max(LIMITS.min_percent, state.quota_percent * slo_rule.CUT_AT_LEAST)
    # growth is one step or one core, never both
    assert new.quota_percent - state.quota_percent <= LIMITS.step_percent
    assert new.lent_cores - state.lent_cores <= 1
