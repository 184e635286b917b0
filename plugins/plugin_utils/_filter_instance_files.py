# -*- coding: utf-8 -*-
# Copyright: cpuinfer.llm contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Which llama_server instance a file on the host belongs to, and the units the metrics exporter watches:
the naming rule of instance files (cpuinfer-llama-NAME.service, NAME.env, NAME.key) in one place.

The code of the instance_files filters (plugins/filter/instance_files.py names them)."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import posixpath
import re

from ansible.errors import AnsibleFilterError

UNIT_PREFIX = "cpuinfer-llama-"
UNIT_SUFFIX = ".service"
_INSTANCE_FILE = re.compile(r"cpuinfer-llama-(?P<unit>.+)[.]service|(?P<file>.+)[.](env|key)")


def unit_name(instance):
    return UNIT_PREFIX + instance + UNIT_SUFFIX


def llama_instances_of_paths(paths, known=None):
    """The instance names the files at paths belong to, in first-seen order, each once; with known,
    only those names (a slice unit or another file is no instance)."""
    names = []
    for path in paths or []:
        match = _INSTANCE_FILE.fullmatch(posixpath.basename(str(path)))
        name = match and (match.group("unit") or match.group("file"))
        if name and name not in names and (known is None or name in known):
            names.append(name)
    return names


def llama_instances_to_restart(instances, written_paths, model_results, venv_changed=False, restart_all=False):
    """The names of instances (the converge's run list, [{name, model_sha256}]) that a converge must restart:
    every one when the Python server's venv changed or a rolling restart is asked for (restart_all), else
    those whose unit, environment file or key was written and those whose model file was copied or
    downloaded (model_results: the loops' results, each with changed and item.model_sha256). In the run
    list's order, each once."""
    names = [instance["name"] for instance in instances or []]
    if venv_changed or restart_all:
        return names
    written = llama_instances_of_paths(written_paths, names)
    models = set(result["item"]["model_sha256"] for result in model_results or [] if result.get("changed"))
    changed = set(written) | set(instance["name"] for instance in instances or [] if instance.get("model_sha256") in models)
    return [name for name in names if name in changed]


def metrics_units(instances, resctrl_group=None):
    """The exporter's watch list for llama_server_instances: {unit, port, engine, resctrl_group} each."""
    units = []
    for instance in instances or []:
        if not isinstance(instance, dict) or "name" not in instance or "port" not in instance:
            raise AnsibleFilterError("metrics_units: each instance needs a name and a port, not %r" % (instance,))
        units.append(dict(unit=unit_name(instance["name"]), port=instance["port"],
                          engine=instance.get("engine") or "llama-server", resctrl_group=resctrl_group or None))
    return units
