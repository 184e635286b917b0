# -*- coding: utf-8 -*-
# Copyright: cpuinfer.llm contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Transparent huge pages through sysfs (/sys/kernel/mm/transparent_hugepage) and its
tmpfiles.d drop-in, which re-applies the values at boot."""

from __future__ import absolute_import, division, print_function

from ansible_collections.cpuinfer.llm.plugins.module_utils._errors import HostError
from ansible_collections.cpuinfer.llm.plugins.module_utils._decimal import is_decimal
from ansible_collections.cpuinfer.llm.plugins.module_utils._knobs import (
    knob_exists,
    parse_selection,
    read_knob,
)

__metaclass__ = type

THP_DIR = "/sys/kernel/mm/transparent_hugepage"
TMPFILES_DROPIN = "/etc/tmpfiles.d/cpuinfer-thp.conf"
SELECTION_KNOBS = ("enabled", "defrag")
KHUGEPAGED_KNOBS = ("defrag", "pages_to_scan", "scan_sleep_millisecs", "alloc_sleep_millisecs", "max_ptes_none")
UINT_MAX = 2 ** 32 - 1  # the kernel parses every khugepaged knob as an unsigned int
SMALL_PAGES_PER_HUGE_PAGE = 512  # x86-64 and 4K-page arm64; read from hpage_pmd_size when the kernel has it


class ThpError(HostError):
    """THP is missing or a requested value is not one the running kernel offers."""


def knob_relative(name):
    """'enabled' -> sysfs path; 'khugepaged.pages_to_scan' -> the khugepaged file."""
    return "%s/%s" % (THP_DIR, name.replace(".", "/"))


def available(root):
    return knob_exists(root, THP_DIR + "/enabled")


def _read_number(root, key):
    text = read_knob(root, knob_relative(key))
    if not is_decimal(text):
        raise ThpError("%s holds %r, not a number: the kernel's THP files are not what this module knows"
                       % (knob_relative(key), text))
    return int(text)


def small_pages_per_huge_page(root, page_size):
    """HPAGE_PMD_NR: how many small pages a PMD-sized huge page holds (512 with 4K pages)."""
    relative = THP_DIR + "/hpage_pmd_size"
    if not knob_exists(root, relative):
        return SMALL_PAGES_PER_HUGE_PAGE
    text = read_knob(root, relative)
    if not is_decimal(text) or int(text) < page_size:
        raise ThpError("%s holds %r, not a size in bytes" % (relative, text))
    return int(text) // page_size


def read_state(root):
    """Current values, normalised: selections as the bracketed word, khugepaged as integers.
    Returns (values, choices) where choices maps each selection knob to what the kernel offers."""
    if not available(root):
        raise ThpError(
            "transparent huge pages are not available: %s is missing "
            "(kernel built without CONFIG_TRANSPARENT_HUGEPAGE?)" % (THP_DIR + "/enabled")
        )
    values, choices = {}, {}
    for name in SELECTION_KNOBS:
        text = read_knob(root, knob_relative(name))
        selected, offered = parse_selection(text)
        if selected is None or selected not in offered:
            raise ThpError("%s holds %r: no [selected] choice, so the current value cannot be known"
                           % (knob_relative(name), text))
        values[name], choices[name] = selected, offered
    for name in KHUGEPAGED_KNOBS:
        key = "khugepaged." + name
        if knob_exists(root, knob_relative(key)):
            values[key] = _read_number(root, key)
    return values, choices


def validate(wanted, current, choices, huge_page_pages=SMALL_PAGES_PER_HUGE_PAGE):
    """Every problem with the request at once, as a list of messages (empty: valid)."""
    problems = []
    for name in SELECTION_KNOBS:
        if name in wanted and wanted[name] not in choices[name]:
            problems.append("%s=%s is not offered by this kernel (it offers: %s)" % (name, wanted[name], ", ".join(choices[name])))
    for key, value in sorted(wanted.items()):
        if not key.startswith("khugepaged."):
            continue
        if key not in current:
            problems.append("%s: this kernel has no %s" % (key, knob_relative(key)))
        elif key == "khugepaged.defrag" and value not in (0, 1):
            problems.append("khugepaged.defrag must be 0 or 1, not %s" % value)
        elif not 0 <= value <= UINT_MAX:
            problems.append("%s must be in 0..%d, not %s" % (key, UINT_MAX, value))
        elif key == "khugepaged.pages_to_scan" and value == 0:
            problems.append("khugepaged.pages_to_scan must be at least 1 (the kernel refuses 0; the default is %d)"
                            % (8 * huge_page_pages))
        elif key == "khugepaged.max_ptes_none" and value > huge_page_pages - 1:
            problems.append("khugepaged.max_ptes_none must be at most %d (a huge page holds %d small pages), not %s"
                            % (huge_page_pages - 1, huge_page_pages, value))
    return problems


def render_dropin(values, header):
    """tmpfiles.d 'w' lines: systemd-tmpfiles writes them into sysfs early at every boot."""
    lines = [header]
    for key in sorted(values):
        lines.append("w %s - - - - %s\n" % (knob_relative(key), values[key]))
    return "".join(lines)


def parse_dropin(text, path=TMPFILES_DROPIN):
    """Values recorded in our own drop-in (so a run that sets one knob keeps the others); ThpError
    naming the line for a khugepaged value that is not a number (an edit by hand)."""
    values = {}
    for line in (text or "").splitlines():
        fields = line.split()
        if len(fields) == 7 and fields[0] == "w" and fields[1].startswith(THP_DIR + "/"):
            key = fields[1][len(THP_DIR) + 1:].replace("/", ".")
            if key.startswith("khugepaged.") and not is_decimal(fields[6]):
                raise ThpError("%s: the line %r holds %r where a number belongs; correct or remove the line"
                               % (path, line, fields[6]))
            values[key] = int(fields[6]) if key.startswith("khugepaged.") else fields[6]
    return values
