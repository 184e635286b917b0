# -*- coding: utf-8 -*-
# Copyright: cpuinfer.llm contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""CPU and NUMA-node lists in the kernel's format ("0-3,8,10-11") <-> sets of integers."""

from __future__ import absolute_import, division, print_function

from ansible_collections.cpuinfer.llm.plugins.module_utils._decimal import is_decimal
from ansible_collections.cpuinfer.llm.plugins.module_utils._errors import HostError

__metaclass__ = type


class CpuListError(HostError, ValueError):
    """A list such as "3-1" or "a,b" that the kernel would refuse."""


def parse_cpulist(text):
    """'0-3,8' -> {0, 1, 2, 3, 8}; '' -> set(). Reversed ranges and junk are refused."""
    result = set()
    text = (text or "").strip()
    if not text:
        return result
    for part in text.split(","):
        part = part.strip()
        bounds = part.split("-")
        if len(bounds) > 2 or not all(is_decimal(b) for b in bounds):
            raise CpuListError("malformed CPU list element %r in %r" % (part, text))
        low, high = int(bounds[0]), int(bounds[-1])
        if low > high:
            raise CpuListError("reversed range %r in %r" % (part, text))
        result.update(range(low, high + 1))
    return result


def format_cpulist(cpus):
    """{0, 1, 2, 3, 8} -> '0-3,8' (the kernel's own canonical form)."""
    ordered = sorted(set(cpus))
    ranges = []
    for cpu in ordered:
        if ranges and cpu == ranges[-1][1] + 1:
            ranges[-1][1] = cpu
        else:
            ranges.append([cpu, cpu])
    return ",".join(str(a) if a == b else "%d-%d" % (a, b) for a, b in ranges)
