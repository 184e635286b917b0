# -*- coding: utf-8 -*-
# Copyright: cpuinfer.llm contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Where llama_server places each model on a host (one read-only file per sha256, shared by every
instance that runs it), and which of them a converge has to copy or download, judged from the files as
a module run reported them: no stat run of their own.

The code of the models filters (plugins/filter/models.py names them)."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import json

from ansible.errors import AnsibleFilterError
from ansible.module_utils.six.moves.collections_abc import Mapping

from ansible_collections.cpuinfer.llm.plugins.plugin_utils._filter_records import record_is

# what a placed model is: root's, read-only for everyone (the instances read it through mmap)
PLACED_MODE = "0444"


def _distinct_by_model(instances):
    if not isinstance(instances, list) or not all(isinstance(item, Mapping) and "model_sha256" in item for item in instances):
        raise AnsibleFilterError("give llama_server_instances (a list of dicts with model_sha256), not %r" % (instances,))
    seen, distinct = set(), []
    for instance in instances:
        if instance["model_sha256"] not in seen:
            seen.add(instance["model_sha256"])
            distinct.append(instance)
    return distinct


def model_file(instance, model_dir):
    return "%s/%s.gguf" % (model_dir.rstrip("/"), instance["model_sha256"])


def model_files(instances, model_dir):
    """The placed model files the instances use, each once."""
    return [model_file(instance, model_dir) for instance in _distinct_by_model(instances)]


def models_to_place(instances, model_dir, records):
    """The first instance of each model whose placed file is missing, was not reported, or differs from
    the model's sha256, mode 0444 or root ownership: one copy or download per model."""
    if not isinstance(records, Mapping):
        raise AnsibleFilterError("models_to_place: give the reported records (a dict), not %r" % (records,))
    return [instance for instance in _distinct_by_model(instances)
            if not record_is(records.get(model_file(instance, model_dir)), instance["model_sha256"], PLACED_MODE)]


def _local(instances):
    if not isinstance(instances, list) or not all(isinstance(item, Mapping) and "model" in item and "model_sha256" in item
                                                  for item in instances):
        raise AnsibleFilterError("give llama_server_instances (a list of dicts with model and model_sha256), not %r"
                                 % (instances,))
    return [item for item in instances if not str(item["model"]).startswith(("http://", "https://"))]


def play_local_models(hosts, hostvars, instances):
    """Each local model (path and sha256) the hosts' instances run, once: hostvars[host].llama_server_instances,
    else `instances` (the value where it is not a host's variable, e.g. a play's). The controller checks
    each once per play, not once per host and instance (a sha256 of every byte, a GGUF parse)."""
    seen, models = set(), []
    for host in hosts:
        own = (hostvars.get(host) or {}).get("llama_server_instances")
        for item in _local(instances if own is None else list(own)):
            key = (item["model"], item["model_sha256"])
            if key not in seen:
                seen.add(key)
                models.append({"name": item.get("name"), "model": item["model"], "model_sha256": item["model_sha256"]})
    return models


def model_checks_by_instance(instances, results):
    """{instance name: the controller's report of its model} from the results of a loop over
    play_local_models running check_gguf.py."""
    if not isinstance(results, list):
        raise AnsibleFilterError("model_checks_by_instance: give the check loop's results (a list), not %r" % (results,))
    reports = dict(((result["item"]["model"], result["item"]["model_sha256"]), json.loads(result["stdout"]))
                   for result in results)
    by_instance = {}
    for item in _local(instances):
        key = (item["model"], item["model_sha256"])
        if key not in reports:
            raise AnsibleFilterError("instance %s: its model %s was not among the models this play checked (its "
                                     "llama_server_instances is neither a host variable nor the play's)"
                                     % (item.get("name"), item["model"]))
        by_instance[item["name"]] = reports[key]
    return by_instance
