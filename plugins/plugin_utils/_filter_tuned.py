# -*- coding: utf-8 -*-
# Copyright: cpuinfer.llm contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""host_tuning's values as the tuned profile it activates where tuned runs.

The code of the tuned filters (plugins/filter/tuned.py names them)."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

from ansible.errors import AnsibleFilterError
from ansible.module_utils.six.moves.collections_abc import Mapping
from ansible_collections.cpuinfer.llm.plugins.module_utils._persist import MANAGED_HEADER
from ansible_collections.cpuinfer.llm.plugins.module_utils._tuned import render_profile


def tuned_profile(plan):
    if not isinstance(plan, Mapping) or not isinstance(plan.get("thp"), Mapping):
        raise AnsibleFilterError("tuned_profile needs a dict with base, thp {enabled, defrag} and sysctls")
    try:
        return render_profile(plan.get("base") or "", plan["thp"], dict(plan.get("sysctls") or {}),
                              governor=plan.get("governor"), banned_cpus=plan.get("banned_cpus") or "",
                              workqueue_mask=plan.get("workqueue_mask") or "",
                              header=MANAGED_HEADER.format(module="cpuinfer.llm.host_tuning"))
    except KeyError as exc:
        raise AnsibleFilterError("tuned_profile: thp lacks %s" % exc)
