# -*- coding: utf-8 -*-
# Copyright: cpuinfer.llm contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Memory sizes as users write them ("8G", "512M", "max") <-> the kernel's bytes or "max"."""

from __future__ import absolute_import, division, print_function

import re

from ansible_collections.cpuinfer.llm.plugins.module_utils._errors import HostError

__metaclass__ = type

UNLIMITED = "max"
_UNITS = {"": 1, "K": 1 << 10, "M": 1 << 20, "G": 1 << 30, "T": 1 << 40}
_SIZE = re.compile(r"\s*([0-9]+)\s*([KMGT]?)(?:I?B)?\s*", re.IGNORECASE)


class SizeError(HostError, ValueError):
    """A size the collection cannot read, such as '8X' or '-1G'."""


def parse_size(value):
    """'8G' -> 8589934592, 4096 -> 4096, 'max' -> 'max'. Units are binary (K = 1024)."""
    if isinstance(value, bool):
        raise SizeError("a size cannot be a boolean: %r" % (value,))
    if isinstance(value, int):
        if value < 0:
            raise SizeError("a size cannot be negative: %r" % (value,))
        return value
    text = str(value).strip()
    if text.lower() in (UNLIMITED, "infinity"):
        return UNLIMITED
    match = _SIZE.fullmatch(text)
    if not match:
        raise SizeError("unknown size %r: use bytes, a K/M/G/T suffix (binary) or 'max'" % (value,))
    return int(match.group(1)) * _UNITS[match.group(2).upper()]


def format_size(value):
    """Bytes -> the largest exact binary unit ('8G'); 'max' stays 'max'."""
    if value == UNLIMITED:
        return UNLIMITED
    for suffix in ("T", "G", "M", "K"):
        unit = _UNITS[suffix]
        if value and value % unit == 0:
            return "%d%s" % (value // unit, suffix)
    return str(value)


def size_le(smaller, larger):
    """Order of two parsed sizes, where 'max' is larger than every number."""
    if larger == UNLIMITED:
        return True
    if smaller == UNLIMITED:
        return False
    return smaller <= larger
