# -*- coding: utf-8 -*-
# Copyright: cpuinfer.llm contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The served half of a calibration: each engine's own server under the role's flags, measured by the host
agent's cpuinfer-served-rate at 1 stream and at the instance's slots at once; and the engine an instance
with engine auto runs, its class's served winner for its model (llama-bench's ranking of the engines did not
hold for served streams before, docs/benchmarks/engines.md: the service is what is compared).

Names only: the code is plugins/plugin_utils/_filter_served_calibration.py, imported at a filter's first call (why:
plugins/plugin_utils/_lazy_filters.py)."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

from ansible_collections.cpuinfer.llm.plugins.plugin_utils._lazy_filters import lazy_filters


class FilterModule(object):
    def filters(self):
        return lazy_filters("_filter_served_calibration", "served_rate_argv")
