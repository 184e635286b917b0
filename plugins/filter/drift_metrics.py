# -*- coding: utf-8 -*-
# Copyright: cpuinfer.llm contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""verify.yml's drift report as Prometheus text, for the textfile collector of the machine that runs
verify (an AWX node, a bastion): the CpuinferTuningDrift alert reads it.

Names only: the code is plugins/plugin_utils/_filter_drift_metrics.py, imported at a filter's first call (why:
plugins/plugin_utils/_lazy_filters.py)."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

from ansible_collections.cpuinfer.llm.plugins.plugin_utils._lazy_filters import lazy_filters


class FilterModule(object):
    def filters(self):
        return lazy_filters("_filter_drift_metrics", "drift_exposition")
