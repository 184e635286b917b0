# -*- coding: utf-8 -*-
# Copyright: cpuinfer.llm contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""How an instance runs its engine: threads, batch threads and ubatch (given, calibrated for its engine,
or derived), and llama.cpp's --numa mode from where the instance is placed.

Names only: the code is plugins/plugin_utils/_filter_engine_settings.py, imported at a filter's first call (why:
plugins/plugin_utils/_lazy_filters.py)."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

from ansible_collections.cpuinfer.llm.plugins.plugin_utils._lazy_filters import lazy_filters


class FilterModule(object):
    def filters(self):
        return lazy_filters(
            "_filter_engine_settings",
            "llama_bench_results",
            "calibration_best",
            "calibration_grid",
            "calibration_document",
            "llama_bench_argv",
            "measured_under",
        )
