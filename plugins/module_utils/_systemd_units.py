# -*- coding: utf-8 -*-
# Copyright: cpuinfer.llm contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Units as systemd sees them, read with one `systemctl show` (unit states have no file interface systemd
promises), and the steps that start what a module run wrote: host_facts reports units' states; managed_files
and kernel_settings start, enable and restart their units in the run that writes them (one round trip, not one
module run per unit), undone with the files when a step fails."""

from __future__ import absolute_import, division, print_function

import re

from ansible_collections.cpuinfer.llm.plugins.module_utils._errors import HostError
from ansible_collections.cpuinfer.llm.plugins.module_utils._paths import normal_path, within
from ansible_collections.cpuinfer.llm.plugins.module_utils._runner import Step

__metaclass__ = type

PROPERTIES = ("Id", "ActiveState", "UnitFileState")
# what a unit systemd did not report is taken to be: not running, no unit file
NOT_LOADED = {"active": "", "file": ""}


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
    if not patterns or not drives_systemd(root):
        return {}
    try:
        return read_states(run, patterns)
    except (HostError, IOError, OSError):
        return {}


def read_states(run, names):
    """The units' states, or HostError where systemctl cannot say: a run that is to start or restart units must
    not take "unknown" for "stopped" (a running unit whose file changed would be left on the old one)."""
    rc, out, err = run(show_argv(names))
    if rc != 0:
        raise HostError("systemctl show %s failed (exit %d): %s" % (
            " ".join(names), rc, err.strip() or "no output"))
    return parse_show(out)


# Units a module run leaves running once its files are written: managed_files and kernel_settings take them,
# so a role writes its units and starts (or restarts) them in one round trip instead of one module run each.
OPTIONS = dict(units=dict(type="list", elements="dict", default=[], options=dict(
    name=dict(type="str", required=True),
    enabled=dict(type="bool"),
    restart_on_change=dict(type="list", elements="str", default=[]),
)))

_UNIT_NAME = re.compile(r"[A-Za-z0-9:_.\\@-]+\.(service|socket|slice|timer|target|path|mount)")
# where unit files and their drop-ins live: a run that changes one reloads systemd before starting anything
_UNIT_DIRECTORIES = ("/etc/systemd/system", "/run/systemd/system", "/usr/lib/systemd/system", "/lib/systemd/system")
# `systemctl is-enabled` answers 0 for these: nothing to enable (a static unit has no [Install] to follow)
_ENABLED = ("enabled", "enabled-runtime", "static", "alias", "indirect", "generated", "transient")
_RUNNING = ("active", "activating", "reloading")


def unit_problems(root, units, paths_written):
    """What is wrong with the units of a request: a name that is no unit, one listed twice, a restart_on_change
    path that is not one of the run's own paths (it could never change here), units below another root."""
    if not units:
        return []
    found, seen = [], set()
    if not drives_systemd(root):
        found.append("units: systemd runs this host's units, not a tree's: give none with root %s" % root)
    for unit in units:
        name = unit["name"]
        if not _UNIT_NAME.fullmatch(name or ""):
            found.append("units: %r is not a unit name (name.service, .slice, .socket, .timer, ...)" % name)
        elif name in seen:
            found.append("units: %s is listed twice" % name)
        seen.add(name)
        found += ["units %s: restart_on_change %s is not one of this run's files" % (name, path)
                  for path in unit["restart_on_change"] if normal_path(path) not in paths_written]
    return found


def drives_systemd(root):
    """Whether a run below root acts on this host (systemctl knows nothing of a tree's units)."""
    return root.rstrip("/") == ""


def reload_needed(changed_paths):
    """Whether a changed path is a unit file or drop-in systemd has to read again."""
    return any(within(path, directory) for path in changed_paths for directory in _UNIT_DIRECTORIES)


def _systemctl(run, *words):
    def do():
        rc, dummy_out, err = run(["systemctl"] + list(words))
        if rc != 0:
            raise HostError("systemctl %s failed (exit %d): %s" % (" ".join(words), rc, err.strip() or "no output"))
    return do


def _nothing():
    return None


class UnitPlan:
    """steps: to run after the file steps; guard: to run before them (its undo reloads systemd and restarts
    again what this run restarted, once the files are back); actions: what the run does, by kind; diff: the
    units' states before and what the run does to them (None when it does nothing)."""

    def __init__(self, steps, guard, actions, diff):
        self.steps, self.guard, self.actions, self.diff = steps, guard, actions, diff

    def around(self, file_steps):
        """The file steps with the units' steps after them, and the guard before them where there are any."""
        return ([self.guard] + file_steps + self.steps) if self.steps else list(file_steps)


def plan(run, units, changed_paths):
    """The steps that reload systemd when a unit file changed, then enable, start or restart each unit as
    asked, with the states read now (before anything is written)."""
    states = read_states(run, [unit["name"] for unit in units]) if units else {}
    changed = set(changed_paths)
    # without units, nothing of systemd is asked for: the caller reloads where it wants (and a tree has no systemd)
    actions = dict(reloaded=bool(units) and reload_needed(changed_paths), enabled=[], disabled=[], started=[],
                   restarted=[])
    steps = [Step("reload systemd", _systemctl(run, "daemon-reload"), _nothing)] if actions["reloaded"] else []
    for unit in units:
        name, state = unit["name"], states.get(unit["name"], NOT_LOADED)
        if unit["enabled"] is True and state["file"] not in _ENABLED:
            actions["enabled"].append(name)
            steps.append(Step("enable " + name, _systemctl(run, "enable", name), _systemctl(run, "disable", name)))
        elif unit["enabled"] is False and state["file"] in ("enabled", "enabled-runtime"):
            actions["disabled"].append(name)
            steps.append(Step("disable " + name, _systemctl(run, "disable", name), _systemctl(run, "enable", name)))
        if state["active"] not in _RUNNING:
            actions["started"].append(name)
            steps.append(Step("start " + name, _systemctl(run, "start", name), _systemctl(run, "stop", name)))
        elif changed.intersection(normal_path(path) for path in unit["restart_on_change"]):
            actions["restarted"].append(name)
            steps.append(Step("restart " + name, _systemctl(run, "restart", name), _nothing))
    return UnitPlan(steps, _guard(run, actions), actions, _diff(units, states, actions))


def _diff(units, states, actions):
    """Each unit a step changes: its state before, and after with what the run does to it."""
    before, after = [], []
    for unit in units:
        name = unit["name"]
        done = [kind for kind in ("enabled", "disabled", "started", "restarted") if name in actions[kind]]
        if not done:
            continue
        state = states.get(name, NOT_LOADED)
        before.append("%s: %s, %s\n" % (name, state["active"] or "not loaded", state["file"] or "no unit file"))
        after.append("%s: %s\n" % (name, ", ".join(done)))
    if actions["reloaded"]:
        after.insert(0, "systemd reloaded (a unit file changed)\n")
    return dict(before="".join(before), after="".join(after), before_header="units", after_header="units") \
        if before or after else None


def _guard(run, actions):
    """A step recorded before the files: undone after them, it makes systemd read the files put back and
    restarts the units this run restarted on the new ones."""
    def undo():
        if actions["reloaded"]:
            _systemctl(run, "daemon-reload")()
        for name in actions["restarted"]:
            _systemctl(run, "restart", name)()
    return Step("systemd reads the files as they were", _nothing, undo)
