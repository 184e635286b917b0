# -*- coding: utf-8 -*-
# Copyright: cpuinfer.llm contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Whether a target's Python can run this controller's ansible-core modules, said before any module runs.

The code of the target_python filters (plugins/filter/target_python.py names them)."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import re

from ansible.errors import AnsibleFilterError
from ansible.module_utils.six.moves.collections_abc import Mapping
from ansible.release import __version__ as ANSIBLE_CORE_VERSION

try:  # the minimum the installed ansible-core's modules check themselves (too late: older Pythons fail to parse them)
    from ansible.module_utils.basic import _PY_MIN as MODULES_PYTHON_MIN
except ImportError:  # pragma: no cover - an ansible-core that moved it; 2.17 to 2.19 need 3.8
    MODULES_PYTHON_MIN = (3, 8)

_VERSION = re.compile(r"^([0-9]+)[.]([0-9]+)$")


def target_python_problem(probe, host="this host", minimum=None):
    """'' when the target's Python is new enough, else the refusal naming both versions. probe: the
    result of the raw task that printed 'MAJOR.MINOR' (or 'none' when no Python was found)."""
    if not isinstance(probe, Mapping):
        raise AnsibleFilterError("target_python_problem needs the registered result of the raw probe")
    minimum = tuple(minimum or MODULES_PYTHON_MIN)
    wanted = "%d.%d" % minimum[:2]
    lines = (probe.get("stdout") or "").strip().splitlines()
    found = lines[-1].strip() if lines else ""
    match = _VERSION.match(found)
    if probe.get("rc", 0) != 0 or not match:
        return ("%s has no Python that ansible-core %s can run modules with (looked for python3, /usr/libexec/platform-python; "
                "found %r): install Python %s or later, or set ansible_python_interpreter" % (host, ANSIBLE_CORE_VERSION, found, wanted))
    version = (int(match.group(1)), int(match.group(2)))
    if version < minimum[:2]:
        return ("%s runs Python %s, but ansible-core %s (the version this collection pins) runs modules only with Python %s "
                "or later: upgrade the host's Python or its OS release (openEuler 20.03 ships 3.7, 22.03 ships 3.9), or "
                "point ansible_python_interpreter at a newer Python" % (host, found, ANSIBLE_CORE_VERSION, wanted))
    return ""
