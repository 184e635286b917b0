#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright: cpuinfer.llm contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import absolute_import, division, print_function

__metaclass__ = type

DOCUMENTATION = r"""
module: managed_files
short_description: Write a set of files and directories in one call, all or none
version_added: 1.0.0
description:
  - Makes every listed directory and file exactly as given (content, mode, owner, group), and removes
    every O(absent) path, in one module run, where a loop of C(ansible.builtin.template) or C(copy) tasks
    makes two module runs per file and a loop of C(ansible.builtin.file) one per path. On an emulated or
    distant host each module run costs seconds, so a role's unit files, drop-ins and environment files
    cost one run instead of a dozen.
  - The whole request is checked before the first write (absolute paths, no path twice, octal modes,
    owners and groups that exist). Missing parent directories are created C(0755) root:root.
  - Files are replaced atomically (a temporary file renamed over the target). When a write fails,
    everything this run wrote or created is put back as it was, and the run fails saying so.
  - Check mode reports what would change and writes nothing; with C(--diff) each changed path
    shows its before and after, a O(files[].secret_content) file only its size.
  - With O(report), also returns further files as they are after the run (sha256, mode, owner), so a
    play decides what to copy without a stat run of its own.
author: cpuinfer.llm maintainers (@cpuinfer)
extends_documentation_fragment:
  - cpuinfer.llm.managed_files
  - cpuinfer.llm.managed_files.absent
options:
  root:
    description: Root of the file tree (a test tree); paths are taken below it.
    type: path
    default: /
  report:
    description:
      - Absolute paths of files to report as they are after the writes (in check mode, as they are now),
        under RV(records). A directory stands for the regular files directly in it.
      - Each file is reported with C(sha256) (of its bytes, read in chunks), C(mode) (octal text), C(uid)
        and C(gid); a named file that does not exist as C(null). Reading changes nothing.
    type: list
    elements: path
    default: []
"""

EXAMPLES = r"""
- name: A unit and its environment file in one module run
  cpuinfer.llm.managed_files:
    directories:
      - path: /etc/example
        mode: "0700"
    files:
      - path: /etc/systemd/system/example.service
        content: "{{ lookup('ansible.builtin.template', 'example.service.j2') }}"
      - path: /etc/example/example.env
        secret_content: "TOKEN={{ example_token }}\n"
        mode: "0600"
  register: example_files

- name: A model directory, and the models already in it as they are, in one module run
  cpuinfer.llm.managed_files:
    directories:
      - path: /var/lib/example/models
    report:
      - /var/lib/example/models/model.gguf
  register: example_models
"""

RETURN = r"""
changed_paths:
  description: The directories and files this run changed (in check mode, would change), in the order written.
  returned: always
  type: list
  elements: str
  sample: [/etc/example, /etc/systemd/system/example.service]
records:
  description: The files of O(report) as they are, by path (C(null) for a named file that is absent).
  returned: always
  type: dict
  sample:
    /var/lib/example/models/model.gguf: {sha256: 9f86d081884c7d65, mode: "0444", uid: 0, gid: 0}
"""

from ansible_collections.cpuinfer.llm.plugins.module_utils import _managed_files
from ansible_collections.cpuinfer.llm.plugins.module_utils._records import problems, records
from ansible_collections.cpuinfer.llm.plugins.module_utils._runner import refuse_if, run_module

ARGUMENT_SPEC = dict(_managed_files.OPTIONS, root=dict(type="path", default="/"),
                     report=dict(type="list", elements="path", default=[]), **_managed_files.ABSENT_OPTIONS)


def converge(module, journal):
    refuse_if(problems("report", module.params["report"]))
    plan = _managed_files.plan(module.params, module.params["root"])
    journal.apply(plan.steps)
    shown = dict(diff=plan.diffs) if module._diff else {}
    return dict(changed=bool(plan.steps), changed_paths=plan.changed_paths,
                records=records(module.params["root"], module.params["report"]), **shown)


def main():
    run_module(ARGUMENT_SPEC, converge)


if __name__ == "__main__":
    main()
