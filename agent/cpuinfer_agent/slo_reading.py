"""How the SLO controller reads an instance's latency: passive first, probes within a budget.

The clients' own requests are the first reading. llama.cpp's counters add each finished request's
tokens and generation time (tokens_predicted_total, tokens_predicted_seconds_total), so a window in which
requests finished gives the mean time per token its clients got. A mean is not a tail: the window's p99
is estimated as mean x tail_factor, the ratio of the p99 inter-token gap to the mean per token that the
host's own streams show (benchmarks/run slo prints it measured against the clients' real gaps; a
calibrated host sets its own).

A probe (a short streamed completion of the controller's own) fills in only where client traffic gave no
reading for a whole window (idle, or requests too long to finish inside it), and only within a budget:
its tokens at most `share` of the instance's token capacity (decode rate x slots), kept by a token
bucket that holds one probe. Between readings the last one stands for at most `max_age` seconds: as long
as the budget needs to afford the next probe, plus a window.
"""

TOKENS, SECONDS = "llamacpp:tokens_predicted_total", "llamacpp:tokens_predicted_seconds_total"


def counter_delta(before, after, name):
    """How much a counter grew between two readings; None without both or after an engine restart."""
    if not before or not after or name not in before or name not in after:
        return None
    grown = after[name] - before[name]
    return grown if grown >= 0 else None


def mean_token_ms(before, after):
    """Mean time per generated token of the requests that finished between two readings of the counters;
    None without tokens in between or across a restarted engine."""
    tokens = counter_delta(before, after, TOKENS)
    seconds = counter_delta(before, after, SECONDS)
    if not tokens or seconds is None:
        return None
    return seconds * 1000.0 / tokens


def estimated_p99_ms(mean_ms, tail_factor):
    """The window's p99 inter-token gap from its clients' mean time per token."""
    return None if mean_ms is None else mean_ms * tail_factor


class ProbeBudget:
    """The controller's own tokens for one instance: refilled at `rate` tokens/s (share x capacity),
    holding at most one probe's worth, so over any stretch of time probes spend at most share x capacity
    plus that one probe."""

    def __init__(self, rate, probe_tokens, now):
        self.rate, self.size = float(rate), float(probe_tokens)
        self.level, self.at = self.size, now
        self.spent, self.probes = 0, 0

    def _refill(self, now):
        self.level = min(self.size, self.level + (now - self.at) * self.rate)
        self.at = now

    def allows(self, now):
        self._refill(now)
        return self.level >= self.size

    def spend(self, tokens, now):
        self._refill(now)
        self.level -= tokens
        self.spent += tokens
        self.probes += 1

    def max_age(self, window_seconds):
        """How long a reading stands in for the next one: the time the budget takes to afford a probe,
        plus a window."""
        return (self.size / self.rate if self.rate > 0 else float("inf")) + window_seconds


class Reading:
    """An instance's latest latency reading: its ratio to the SLO, where it came from and when."""

    def __init__(self, ratio, source, at):
        self.ratio, self.source, self.at = ratio, source, at


def window_reading(client_ratio, probe_ratio, last, now, max_age):
    """(ratio, source) of one instance for the window: the worse of the clients' and the probe's where
    either was read, else the last reading while it is younger than max_age ('carried'), else (None, None)."""
    read = [r for r in (client_ratio, probe_ratio) if r is not None]
    if read:
        source = "clients" if client_ratio is not None and (probe_ratio is None or client_ratio >= probe_ratio) else "probe"
        return max(read), source
    if last is not None and now - last.at <= max_age:
        return last.ratio, "carried"
    return None, None
