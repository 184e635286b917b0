# -*- coding: utf-8 -*-
# Copyright: cpuinfer.llm contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The health gate's judgement: measured instances against absolute floors and the host's own baseline.

The code of the gate filters (plugins/filter/gate.py names them)."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

from ansible.errors import AnsibleFilterError
from ansible.module_utils.six.moves.collections_abc import Mapping


def _number(value, what):
    try:
        return float(value)
    except (TypeError, ValueError):
        raise AnsibleFilterError("gate_verdicts: %s must be a number, not %r" % (what, value))


def _verdict(name, now, before, limits):
    floor, ceiling, min_ratio, max_p99_ratio = limits
    rate, p99 = _number(now.get("tokens_per_second"), name + " tokens_per_second"), _number(now.get("p99_ms"), name + " p99_ms")
    problems, parts = [], ["%.3g tokens/s" % rate, "p99 %.1f ms" % p99]
    if rate < floor:
        problems.append("rate below the floor %.3g tokens/s" % floor)
    if p99 > ceiling:
        problems.append("p99 above the ceiling %.1f ms" % ceiling)
    if before is not None:
        base_rate = _number(before.get("tokens_per_second"), name + " baseline tokens_per_second")
        base_p99 = _number(before.get("p99_ms"), name + " baseline p99_ms")
        parts.append("baseline %.3g tokens/s, p99 %.1f ms" % (base_rate, base_p99))
        if rate < min_ratio * base_rate:
            problems.append("rate below %.2f x its baseline (%.3g tokens/s)" % (min_ratio, min_ratio * base_rate))
        if base_p99 > 0 and p99 > max_p99_ratio * base_p99:
            problems.append("p99 above %.2f x its baseline (%.1f ms)" % (max_p99_ratio, max_p99_ratio * base_p99))
    else:
        parts.append("no baseline (not running before): floors only")
    reason = ", ".join(parts) + ("" if not problems else ": " + "; ".join(problems))
    return dict(name=name, passed=not problems, reason=reason, tokens_per_second=rate, p99_ms=p99,
                baseline=dict(before) if before is not None else None)


def gate_verdicts(measured, baseline, expected, min_tokens_per_second, max_p99_ms, min_ratio, max_p99_ratio):
    """One verdict per instance (measured, or expected and missing), sorted by name."""
    for what, value in (("measurements", measured), ("baseline", baseline)):
        if not isinstance(value, Mapping):
            raise AnsibleFilterError("gate_verdicts: the %s must be a dict of instance name to measurement" % what)
    limits = (_number(min_tokens_per_second, "health_gate_min_tokens_per_second"),
              _number(max_p99_ms, "health_gate_max_p99_ms"),
              _number(min_ratio, "health_gate_min_ratio"), _number(max_p99_ratio, "health_gate_max_p99_ratio"))
    verdicts = []
    for name in sorted(set(measured) | set(expected or [])):
        if name not in measured:
            verdicts.append(dict(name=name, passed=False, reason="not running: no active unit to measure",
                                 tokens_per_second=None, p99_ms=None, baseline=baseline.get(name)))
        else:
            verdicts.append(_verdict(name, measured[name], baseline.get(name), limits))
    return verdicts
