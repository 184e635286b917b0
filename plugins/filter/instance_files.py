# -*- coding: utf-8 -*-
# Copyright: cpuinfer.llm contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Which llama_server instance a file on the host belongs to, and the units the metrics exporter watches:
the naming rule of instance files (cpuinfer-llama-NAME.service, NAME.env, NAME.key) in one place.

Names only: the code is plugins/plugin_utils/_filter_instance_files.py, imported at a filter's first call (why:
plugins/plugin_utils/_lazy_filters.py)."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

from ansible_collections.cpuinfer.llm.plugins.plugin_utils._lazy_filters import lazy_filters


class FilterModule(object):
    def filters(self):
        return lazy_filters(
            "_filter_instance_files",
            "llama_instances_of_paths",
            "llama_instances_to_restart",
            "metrics_units",
        )
