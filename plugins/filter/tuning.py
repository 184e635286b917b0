# -*- coding: utf-8 -*-
# Copyright: cpuinfer.llm contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""host_tuning's record of the host before the first converge, and its drift report, built from what the
modules read (thp, perf_paranoid, sysctl, irq_affinity in check mode): no kernel file is parsed here.

Names only: the code is plugins/plugin_utils/_filter_tuning.py, imported at a filter's first call (why:
plugins/plugin_utils/_lazy_filters.py)."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

from ansible_collections.cpuinfer.llm.plugins.plugin_utils._lazy_filters import lazy_filters


class FilterModule(object):
    def filters(self):
        return lazy_filters(
            "_filter_tuning",
            "tuning_record",
            "tuning_record_kept",
            tuning_settings="tuning_settings_of",
        )
