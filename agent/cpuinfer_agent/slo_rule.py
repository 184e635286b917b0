"""The SLO controller's rule: how much CPU best-effort (BE) work may have, from the latency-critical
(LC) instances' latency. Pure functions over plain values; the controller reads and applies.

The LC side is never touched: llama.cpp's threads meet at a barrier every token, so a quota on them
stalls every thread for the rest of a period (upstream: 0.27 tok/s under a quota against 12.07). The
lever is BE's share, as in Heracles (ISCA 2015):

- latency above the SLO (slack < 0): BE's quota is cut in proportion to SLO/p99, at least by
  CUT_AT_LEAST and at most to CUT_AT_MOST of what it was, and every lent core comes back at once;
- the LC groups' CPU pressure above its bound while latency is still within: one lent core back and
  BE cut by CUT_AT_LEAST (pressure rises before the tail does);
- slack at least GROW_SLACK, no pressure, and no change for min_interval: BE grows by one step, and
  when its quota already fills the CPUs it may use, one more inference core is lent (shared, never
  taken: the LC units' own CPUs do not shrink, and BE runs as cpu.idle below them);
- in between: hold (the band is the hysteresis);
- latency that cannot be read: the safe minimum, no lent core.
"""

import math

GROW_SLACK = 0.3
CUT_AT_LEAST, CUT_AT_MOST = 0.8, 0.5


class State:
    """What BE holds: a quota in percent of one CPU and how many inference cores are lent to it."""

    def __init__(self, quota_percent, lent_cores):
        self.quota_percent, self.lent_cores = quota_percent, lent_cores

    def __eq__(self, other):
        return (self.quota_percent, self.lent_cores) == (other.quota_percent, other.lent_cores)

    def __repr__(self):
        return "State(%d%%, %d lent)" % (self.quota_percent, self.lent_cores)


class Limits:
    """min_percent: the safe minimum (also what the slice's drop-in holds while nothing controls it);
    step_percent: one growth step; base_cpus: BE's own CPUs; lendable_cores: inference cores, each a
    CPU count, in the order they are lent; psi_some_max: the LC groups' cpu 'some' avg10 bound (%)."""

    def __init__(self, min_percent, step_percent, base_cpus, lendable_cores, psi_some_max, min_interval):
        self.min_percent, self.step_percent = min_percent, step_percent
        self.base_cpus, self.lendable_cores = base_cpus, list(lendable_cores)
        self.psi_some_max, self.min_interval = psi_some_max, min_interval

    def cpus(self, lent_cores):
        return self.base_cpus + sum(self.lendable_cores[:lent_cores])

    def cap(self, lent_cores):
        """The most quota BE can use on the CPUs it may run on."""
        return 100 * self.cpus(lent_cores)


def decide(state, ratio, psi_some, since_change, limits):
    """(new State, reason). ratio: the worst LC p99 / SLO of the window, None when unreadable;
    psi_some: the highest LC cpu 'some' avg10; since_change: seconds since BE last changed."""
    if ratio is None:
        safe = State(limits.min_percent, 0)
        return safe, "LC latency unreadable: BE at its safe minimum %d%%, no core lent" % limits.min_percent
    slack = 1.0 - ratio
    if slack < 0:
        factor = min(CUT_AT_LEAST, max(CUT_AT_MOST, 1.0 / ratio))
        quota = max(limits.min_percent, int(math.floor(state.quota_percent * factor)))
        new = State(min(quota, limits.cap(0)), 0)
        return new, "LC p99 %.2f x SLO: cut BE %d%% -> %d%% (x%.2f), lent cores %d -> 0" % (
            ratio, state.quota_percent, new.quota_percent, factor, state.lent_cores)
    if psi_some is not None and psi_some > limits.psi_some_max:
        lent = max(0, state.lent_cores - 1)
        quota = max(limits.min_percent, int(math.floor(state.quota_percent * CUT_AT_LEAST)))
        new = State(min(quota, limits.cap(lent)), lent)
        return new, "LC CPU pressure %.1f %% > %.1f %% (p99 %.2f x SLO): cut BE %d%% -> %d%%, lent cores %d -> %d" % (
            psi_some, limits.psi_some_max, ratio, state.quota_percent, new.quota_percent, state.lent_cores, lent)
    if slack >= GROW_SLACK and since_change >= limits.min_interval:
        cap = limits.cap(state.lent_cores)
        if state.quota_percent < cap:
            new = State(min(cap, state.quota_percent + limits.step_percent), state.lent_cores)
            return new, "LC p99 %.2f x SLO (slack %.2f): grow BE %d%% -> %d%%" % (
                ratio, slack, state.quota_percent, new.quota_percent)
        if state.lent_cores < len(limits.lendable_cores):
            new = State(state.quota_percent, state.lent_cores + 1)
            return new, "LC p99 %.2f x SLO (slack %.2f), BE at its cap %d%%: lend a core (%d -> %d)" % (
                ratio, slack, cap, state.lent_cores, new.lent_cores)
        return state, "LC p99 %.2f x SLO: BE already has every CPU it may have" % ratio
    return state, "LC p99 %.2f x SLO: hold" % ratio


def resumable(kept, now, max_age, limits):
    """The State a clean stop left ({time, quota_percent, lent_cores}) where it is at most max_age seconds
    old and the limits (perhaps changed since) still allow it; None otherwise."""
    try:
        age = now - float(kept["time"])
        state = State(int(kept["quota_percent"]), int(kept["lent_cores"]))
    except (TypeError, KeyError, ValueError):
        return None
    if not 0 <= age <= max_age or not 0 <= state.lent_cores <= len(limits.lendable_cores):
        return None
    if not limits.min_percent <= state.quota_percent <= limits.cap(state.lent_cores):
        return None
    return state
