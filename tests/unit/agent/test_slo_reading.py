"""How the controller reads latency: the clients' counters, the probe budget, and which reading a window takes."""

from hypothesis import given, strategies as st

from cpuinfer_agent import slo_reading

TOKENS, SECONDS = "llamacpp:tokens_predicted_total", "llamacpp:tokens_predicted_seconds_total"


def test_mean_token_ms_ignores_restarts_and_quiet_windows():
    reading = {TOKENS: 10, SECONDS: 1.0}
    assert slo_reading.mean_token_ms(None, reading) is None
    assert slo_reading.mean_token_ms(reading, reading) is None
    assert slo_reading.mean_token_ms({TOKENS: 50, SECONDS: 9.0}, reading) is None  # the engine restarted
    assert slo_reading.mean_token_ms(reading, {TOKENS: 30, SECONDS: 2.5}) == 75.0


def test_the_estimate_scales_the_mean_by_the_tail_factor():
    assert slo_reading.estimated_p99_ms(80.0, 1.25) == 100.0
    assert slo_reading.estimated_p99_ms(None, 1.25) is None


def test_a_window_takes_the_worse_reading_then_carries_the_last_one_while_it_is_young():
    last = slo_reading.Reading(0.4, "probe", 100.0)
    assert slo_reading.window_reading(0.7, 0.5, last, 110.0, 50.0) == (0.7, "clients")
    assert slo_reading.window_reading(0.3, 0.5, last, 110.0, 50.0) == (0.5, "probe")
    assert slo_reading.window_reading(None, None, last, 150.0, 50.0) == (0.4, "carried")
    assert slo_reading.window_reading(None, None, last, 150.1, 50.0) == (None, None)
    assert slo_reading.window_reading(None, None, None, 150.0, 50.0) == (None, None)


def test_the_budget_refills_to_one_probe():
    budget = slo_reading.ProbeBudget(rate=0.2, probe_tokens=8, now=0.0)
    assert budget.allows(0.0)
    budget.spend(8, 0.0)
    assert not budget.allows(39.9) and budget.allows(40.0)
    assert budget.max_age(10) == 50.0
    assert slo_reading.ProbeBudget(0.0, 8, 0.0).max_age(10) == float("inf")


@given(rate=st.floats(0.01, 100.0), probe_tokens=st.integers(2, 64),
       steps=st.lists(st.tuples(st.floats(0.0, 30.0), st.integers(1, 64)), max_size=200))
def test_probes_never_spend_more_than_the_rate_plus_one_probe(rate, probe_tokens, steps):
    """Whatever the times a controller asks at and whatever a probe costs (never more than it asked for)."""
    budget, now = slo_reading.ProbeBudget(rate, probe_tokens, 0.0), 0.0
    for gap, cost in steps:
        now += gap
        if budget.allows(now):
            budget.spend(min(cost, probe_tokens), now)
    assert budget.spent <= rate * now + probe_tokens + 1e-6
