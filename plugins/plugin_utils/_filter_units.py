# -*- coding: utf-8 -*-
# Copyright: cpuinfer.llm contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Whether units host_facts reported (cpuinfer_units) already run, and are enabled where asked: then a play
skips the task that would start them, and its module run per unit.

The code of the units filters (plugins/filter/units.py names them)."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

from ansible.errors import AnsibleFilterError
from ansible.module_utils.six.moves.collections_abc import Mapping


def units_running(units, names, enabled=()):
    """True when every unit of names is active and every unit of enabled is enabled; False when one is not, or
    was not reported."""
    if not isinstance(units, Mapping):
        raise AnsibleFilterError("units_running: give host_facts' cpuinfer_units (a dict), not %r" % (units,))
    return (all((units.get(name) or {}).get("active") == "active" for name in names)
            and all((units.get(name) or {}).get("file") == "enabled" for name in enabled))
