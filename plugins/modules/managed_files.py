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
  - O(required_directories) and O(validate) refuse a request whose files would not work (a directory a
    file names is missing, a configuration its program rejects) before the first write, in the same run.
author: cpuinfer.llm maintainers (@cpuinfer)
extends_documentation_fragment:
  - cpuinfer.llm.managed_files
  - cpuinfer.llm.managed_files.absent
  - cpuinfer.llm.managed_files.units
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
  required_directories:
    description:
      - Directories that must exist already (made by a package or a service, not by this run, e.g. where a
        configuration puts a socket). When one is not an existing directory the run is refused, naming
        every one, and nothing is written; check mode refuses alike.
    type: list
    elements: path
    default: []
  validate:
    description:
      - Commands that check a file's new content before anything is written (as C(ansible.builtin.template)'s
        C(validate) does, for any file of the set). Each runs only when its file's content changes, with
        C(%s) in its O(validate[].argv) replaced by a temporary file holding the new content; a command
        that exits non-zero refuses the run with its output, nothing written.
      - Not run in check mode (the program that checks may not be installed yet on a host seen for the first time).
    type: list
    elements: dict
    default: []
    suboptions:
      path:
        description: The file to check, one of O(files[].path).
        type: str
        required: true
      argv:
        description: The command and its arguments, run without a shell; one argument holds C(%s).
        type: list
        elements: str
        required: true
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

- name: A configuration its program accepts, beside the directory it needs, in one module run
  cpuinfer.llm.managed_files:
    required_directories: [/run/haproxy]
    files:
      - path: /etc/haproxy/haproxy.cfg
        content: "{{ lookup('ansible.builtin.template', 'haproxy.cfg.j2') }}"
    validate:
      - path: /etc/haproxy/haproxy.cfg
        argv: [/usr/sbin/haproxy, -c, -q, -f, "%s"]

- name: A model directory, and the models already in it as they are, in one module run
  cpuinfer.llm.managed_files:
    directories:
      - path: /var/lib/example/models
    report:
      - /var/lib/example/models/model.gguf
  register: example_models
"""

RETURN = r"""
units:
  description:
    - What the run did to O(units) (in check mode, would do) - C(reloaded) systemd, and the units C(enabled),
      C(disabled), C(started) and C(restarted).
  returned: always
  type: dict
  sample: {reloaded: true, enabled: [example.service], disabled: [], started: [example.service], restarted: []}
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

import os
import tempfile

from ansible_collections.cpuinfer.llm.plugins.module_utils import _managed_files, _systemd_units
from ansible_collections.cpuinfer.llm.plugins.module_utils._paths import normal_path
from ansible_collections.cpuinfer.llm.plugins.module_utils._records import problems, records
from ansible_collections.cpuinfer.llm.plugins.module_utils._runner import refuse_if, run_module

ARGUMENT_SPEC = dict(_managed_files.OPTIONS, root=dict(type="path", default="/"),
                     report=dict(type="list", elements="path", default=[]),
                     required_directories=dict(type="list", elements="path", default=[]),
                     validate=dict(type="list", elements="dict", default=[], options=dict(
                         path=dict(type="str", required=True), argv=dict(type="list", elements="str", required=True))),
                     **dict(_managed_files.ABSENT_OPTIONS, **_systemd_units.OPTIONS))


def rejected_contents(module, plan):
    """What each validate command said of the new content of its file, for the files whose content changes."""
    found = []
    for check in module.params["validate"]:
        path = normal_path(check["path"])
        if path not in plan.changed_paths:
            continue
        # the system's temporary directory, private to us (0600): module.tmpdir would make ansible's remote_tmp
        # under become, with a warning on every host, where pipelining made none
        handle, scratch = tempfile.mkstemp(prefix="managed_files.")
        try:
            with os.fdopen(handle, "w", encoding="utf-8") as out:
                out.write(plan.files[path].content)
            rc, out, err = module.run_command([word.replace("%s", scratch) for word in check["argv"]])
        finally:
            os.unlink(scratch)
        if rc != 0:
            found.append("%s: %s refused the new content (exit %d): %s" % (
                path, " ".join(check["argv"]), rc, (err or out).strip()[-2000:] or "no output"))
    return found


def converge(module, journal):
    params = module.params
    refuse_if(problems("report", params["report"])
              + _managed_files.missing_required_directories(params["root"], params["required_directories"])
              + _managed_files.validate_problems(params)
              + _systemd_units.unit_problems(params["root"], params["units"], _managed_files.request_paths(params)))
    plan = _managed_files.plan(params, params["root"])
    if not module.check_mode:
        refuse_if(rejected_contents(module, plan))
    units = _systemd_units.plan(module.run_command, params["units"], plan.changed_paths)
    journal.apply(units.around(plan.steps))
    shown = dict(diff=plan.diffs + ([units.diff] if units.diff else [])) if module._diff else {}
    return dict(changed=bool(plan.steps or units.steps), changed_paths=plan.changed_paths, units=units.actions,
                records=records(module.params["root"], module.params["report"]), **shown)


def main():
    run_module(ARGUMENT_SPEC, converge)


if __name__ == "__main__":
    main()
