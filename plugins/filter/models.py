# -*- coding: utf-8 -*-
# Copyright: cpuinfer.llm contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Where llama_server places each model on a host (one read-only file per sha256, shared by every
instance that runs it), and which of them a converge has to copy or download, judged from the files as
a module run reported them: no stat run of their own."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

from ansible.errors import AnsibleFilterError
from ansible.module_utils.six.moves.collections_abc import Mapping

from ansible_collections.cpuinfer.llm.plugins.filter.records import record_is

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


class FilterModule(object):
    def filters(self):
        return {"model_files": model_files, "models_to_place": models_to_place}
