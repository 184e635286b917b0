# -*- coding: utf-8 -*-
# Copyright: cpuinfer.llm contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""llama_server instances as they will run: defaults, threads, memory limits derived from the model.

Names only: the code is plugins/plugin_utils/_filter_llama.py, imported at a filter's first call (why:
plugins/plugin_utils/_lazy_filters.py)."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

from ansible_collections.cpuinfer.llm.plugins.plugin_utils._lazy_filters import lazy_filters


class FilterModule(object):
    def filters(self):
        return lazy_filters(
            "_filter_llama",
            "llama_instances",
            "llama_instance_problems",
            "model_memory",
            "llama_build_classes",
            "llama_build_argv",
            "llama_build_sources",
        )
