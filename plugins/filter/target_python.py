# -*- coding: utf-8 -*-
# Copyright: cpuinfer.llm contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Whether a target's Python can run this controller's ansible-core modules, said before any module runs.

Names only: the code is plugins/plugin_utils/_filter_target_python.py, imported at a filter's first call (why:
plugins/plugin_utils/_lazy_filters.py)."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

from ansible_collections.cpuinfer.llm.plugins.plugin_utils._lazy_filters import lazy_filters


class FilterModule(object):
    def filters(self):
        return lazy_filters("_filter_target_python", "target_python_problem")
