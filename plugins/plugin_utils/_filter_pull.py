# -*- coding: utf-8 -*-
# Copyright: cpuinfer.llm contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The pull mode's settings checked, and the command its unit runs, built from them.

The code of the pull filters (plugins/filter/pull.py names them)."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import re

from ansible.errors import AnsibleFilterError
from ansible.module_utils.six.moves.collections_abc import Mapping
from ansible.release import __version__ as ANSIBLE_CORE_VERSION

try:
    from importlib.metadata import PackageNotFoundError, metadata
except ImportError:  # pragma: no cover - Python before 3.8 runs no controller
    metadata = None

# A word of the unit's ExecStart: systemd splits on spaces and expands %, $ and quotes; none of them here.
_WORD = re.compile(r"^[A-Za-z0-9@:/._~+=,-]+$")
_VERSION = re.compile(r"^([0-9]+)[.]([0-9]+)$")
_FALLBACK_MINIMUM = (3, 11)  # ansible-core 2.18 and 2.19's controller minimum
TEXT_SETTINGS = ("url", "ref", "inventory", "playbook", "host")


def controller_python_minimum():
    """(major, minor) ansible-core's package says its controller needs (Requires-Python), e.g. (3, 11)."""
    try:
        requires = metadata("ansible-core").get("Requires-Python") or ""
    except (PackageNotFoundError, TypeError):
        return _FALLBACK_MINIMUM
    match = re.search(r">=\s*([0-9]+)[.]([0-9]+)", requires)
    return (int(match.group(1)), int(match.group(2))) if match else _FALLBACK_MINIMUM


def pull_problems(settings, minimum=None):
    """Every reason the pull mode cannot run on the host as set, as messages ([] when it can).
    settings: url, ref, inventory, playbook, host (the inventory name), python (the host's X.Y),
    interval, random_delay, full_every (seconds)."""
    if not isinstance(settings, Mapping):
        raise AnsibleFilterError("pull_problems: give the settings as a dict, not %r" % (settings,))
    problems = []
    for name in TEXT_SETTINGS:
        value = settings.get(name)
        if not isinstance(value, str) or not _WORD.match(value):
            problems.append("%s %r is not one word of letters, digits and @:/._~+=,- (it becomes a word of the "
                            "unit's command)" % (name, value))
    for name in ("inventory", "playbook"):
        value = settings.get(name)
        if isinstance(value, str) and (value.startswith("/") or ".." in value.split("/")):
            problems.append("%s %r must be a path inside the checkout, relative to its top" % (name, value))
    for name, least in (("interval", 60), ("random_delay", 0), ("full_every", 0)):
        value = settings.get(name)
        if isinstance(value, bool) or not isinstance(value, int) or value < least:
            problems.append("%s %r is not a whole number of seconds of at least %d" % (name, value, least))
    minimum = tuple(minimum or controller_python_minimum())
    match = _VERSION.match(str(settings.get("python") or ""))
    if not match or (int(match.group(1)), int(match.group(2))) < minimum[:2]:
        problems.append("the host runs Python %s, but ansible-pull runs ansible-core %s's controller, which needs Python %d.%d "
                        "or later (Debian 12 has 3.11; Ubuntu 22.04's 3.10, openEuler 22.03's and RHEL 9's 3.9 are too old): "
                        "converge this host from a controller instead" % (settings.get("python") or "(none found)", ANSIBLE_CORE_VERSION,
                                                                          minimum[0], minimum[1]))
    return problems


def pull_command(settings, paths):
    """The unit's ExecStart words: cpuinfer-pull-run, then ansible-pull with what it needs. paths: runner (the
    agent's cpuinfer-pull-run), ansible_pull, checkout, state, textfile, extra_vars (a JSON file)."""
    problems = pull_problems(settings, minimum=(0, 0))
    if problems:
        raise AnsibleFilterError("pull_command: %s" % "; ".join(problems))
    for name in ("runner", "ansible_pull", "checkout", "state", "textfile", "extra_vars"):
        if not _WORD.match(str(paths.get(name) or "")) or not str(paths[name]).startswith("/"):
            raise AnsibleFilterError("pull_command: %s %r is not an absolute path of letters, digits and @:/._~+=,-"
                                     % (name, paths.get(name)))
    words = [paths["runner"], "--textfile", paths["textfile"], "--state", paths["state"], "--checkout", paths["checkout"],
             "--ref", settings["ref"], "--interval", str(settings["interval"]), "--full-every", str(settings["full_every"]),
             "--",
             paths["ansible_pull"], "--url", settings["url"], "--checkout", settings["ref"], "--directory", paths["checkout"],
             # relative: on the first run, before the checkout exists, ansible-pull fetches with its own localhost
             # inventory; afterwards it reads this one from the checkout
             "--inventory", settings["inventory"], "--limit", settings["host"],
             "--extra-vars", "@" + paths["extra_vars"], settings["playbook"]]
    return " ".join(words)
