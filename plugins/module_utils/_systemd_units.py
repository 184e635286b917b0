# -*- coding: utf-8 -*-
# Copyright: cpuinfer.llm contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Units as systemd sees them, read with one `systemctl show` (unit states have no file interface systemd
promises): host_facts reports the collection's units, so a converge starts only what does not run yet,
without a module run per unit to find out."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

PROPERTIES = ("Id", "ActiveState", "UnitFileState")


def show_argv(patterns):
    """systemctl's arguments for the loaded units matching the patterns (shell globs such as cpuinfer-*)."""
    return ["systemctl", "show", "--property=" + ",".join(PROPERTIES), "--"] + list(patterns)


def parse_show(text):
    """{unit: {active: ActiveState, file: UnitFileState}} of `systemctl show`'s blocks (one per unit, blank lines
    between them); a block without an Id is left out."""
    units = {}
    for block in text.split("\n\n"):
        values = dict(line.split("=", 1) for line in block.splitlines() if "=" in line)
        if values.get("Id"):
            units[values["Id"]] = {"active": values.get("ActiveState", ""), "file": values.get("UnitFileState", "")}
    return units


def unit_states(run, root, patterns):
    """The loaded units matching patterns, as parse_show gives them. run(argv) -> (rc, stdout, stderr).
    {} without patterns, below a root other than / (a test tree or a snapshot has no systemd to ask) and
    where systemctl fails or is missing: a unit not reported is one a play starts as before."""
    if not patterns or root.rstrip("/") != "":
        return {}
    try:
        rc, out, dummy_err = run(show_argv(patterns))
    except (IOError, OSError):
        return {}
    return parse_show(out) if rc == 0 else {}
