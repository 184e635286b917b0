# -*- coding: utf-8 -*-
# Copyright: cpuinfer.llm contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The front door's plan: one HAProxy backend per model name, one server per instance behind it.

Names only: the code is plugins/plugin_utils/_filter_frontdoor.py, imported at a filter's first call (why:
plugins/plugin_utils/_lazy_filters.py)."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

from ansible_collections.cpuinfer.llm.plugins.plugin_utils._lazy_filters import lazy_filters


class FilterModule(object):
    def filters(self):
        return lazy_filters(
            "_filter_frontdoor",
            "frontdoor_backends",
            "frontdoor_server_name",
            "frontdoor_states",
            "frontdoor_setting",
        )
