# -*- coding: utf-8 -*-
# Copyright: cpuinfer.llm contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Where llama_server places each model on a host (one read-only file per sha256, shared by every
instance that runs it), and which of them a converge has to copy or download, judged from the files as
a module run reported them: no stat run of their own.

Names only: the code is plugins/plugin_utils/_filter_models.py, imported at a filter's first call (why:
plugins/plugin_utils/_lazy_filters.py)."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

from ansible_collections.cpuinfer.llm.plugins.plugin_utils._lazy_filters import lazy_filters


class FilterModule(object):
    def filters(self):
        return lazy_filters(
            "_filter_models",
            "model_files",
            "models_to_place",
            "play_local_models",
            "model_checks_by_instance",
        )
