# -*- coding: utf-8 -*-
# Copyright: cpuinfer.llm contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Filter files that hold names only, their code imported at a filter's first call.

For any one filter of a collection, ansible-core loads every filter file of it (its Jinja2 plugin loader walks
the whole package, compiling each file from source, without a bytecode cache) and it does so again in each
task's worker process. With the code in the filter files, a task that used one of our filters paid about 20 ms
of controller CPU for all of them (docs/rollout.md, "Our filters, compiled again in every task's worker"); a
file of names costs a fraction of that, and a task compiles only the code of the filters it calls."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

from importlib import import_module

PACKAGE = "ansible_collections.cpuinfer.llm.plugins.plugin_utils"


def _deferred(module, filter_name, function_name):
    """A function that imports module at its first call and calls function_name there with its arguments."""
    def call(*args, **kwargs):
        return getattr(import_module("%s.%s" % (PACKAGE, module)), function_name)(*args, **kwargs)
    call.__name__ = filter_name
    call.__qualname__ = filter_name
    return call


def lazy_filters(module, *names, **renamed):
    """A FilterModule's filters: each of names (and each filter=function of renamed) as a function of the
    plugin_utils file module, imported when a filter is first called."""
    functions = dict((name, name) for name in names)
    functions.update(renamed)
    return dict((name, _deferred(module, name, function)) for name, function in functions.items())
