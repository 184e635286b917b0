# -*- coding: utf-8 -*-
# Copyright: cpuinfer.llm contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Decimal numbers as the kernel writes and reads them: ASCII digits only.

str.isdigit() and the regular expression class \\d also accept digits of other scripts
(fullwidth '１０', superscript '²'); int() reads some of them and refuses others, and the kernel's
files take neither. Every number the collection reads from a user or a kernel file is checked here."""

from __future__ import absolute_import, division, print_function

import re

__metaclass__ = type

_DECIMAL = re.compile(r"[0-9]+\Z")
_SIGNED = re.compile(r"-?[0-9]+\Z")


def is_decimal(text):
    """'12' -> True; '１２', '²', '-1', '', 12 -> False."""
    return isinstance(text, str) and _DECIMAL.match(text) is not None


def is_signed_decimal(text):
    """'-12' and '12' -> True."""
    return isinstance(text, str) and _SIGNED.match(text) is not None


def parse_int(text, what):
    """An integer from ASCII decimal text (sign allowed); ValueError naming what otherwise."""
    stripped = text.strip() if isinstance(text, str) else text
    if not is_signed_decimal(stripped):
        raise ValueError("%s: %r is not a decimal integer" % (what, text))
    return int(stripped)
