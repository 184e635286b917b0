#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright: cpuinfer.llm contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import absolute_import, division, print_function

__metaclass__ = type

DOCUMENTATION = r"""
module: managed_files
short_description: Write a set of files and directories in one call, all or none
version_added: 0.4.0
description:
  - Makes every listed directory and file exactly as given (content, mode, owner, group) in one
    module run, where a loop of C(ansible.builtin.template) or C(copy) tasks makes two module runs
    per file. On an emulated or distant host each module run costs seconds, so a role's unit files,
    drop-ins and environment files cost one run instead of a dozen.
  - The whole request is checked before the first write (absolute paths, no path twice, octal modes,
    owners and groups that exist). Missing parent directories are created C(0755) root:root.
  - Files are replaced atomically (a temporary file renamed over the target). When a write fails,
    everything this run wrote or created is put back as it was, and the run fails saying so.
  - Check mode reports what would change and writes nothing; with C(--diff) each changed path
    shows its before and after, a O(files[].secret) file only its size.
author: cpuinfer.llm maintainers (@cpuinfer)
options:
  directories:
    description: Directories to create or correct.
    type: list
    elements: dict
    default: []
    suboptions:
      path: &path
        description: Absolute path.
        type: str
        required: true
      mode:
        description: Permission bits, octal text.
        type: str
        default: "0755"
      owner: &owner
        description: Owner's user name.
        type: str
        default: root
      group: &group
        description: Group name.
        type: str
        default: root
  files:
    description: Files to write.
    type: list
    elements: dict
    default: []
    suboptions:
      path: *path
      content:
        description: The whole text of the file.
        type: str
        required: true
      mode:
        description: Permission bits, octal text.
        type: str
        default: "0644"
      owner: *owner
      group: *group
      secret:
        description: The content is a secret; the diff shows its size, not its text.
        type: bool
        default: false
  root:
    description: Root of the file tree (a test tree); paths are taken below it.
    type: path
    default: /
notes:
  - Use C(no_log) on a task that writes secrets; O(files[].secret) only keeps them out of the diff.
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
        content: "TOKEN={{ example_token }}\n"
        mode: "0600"
        secret: true
  register: example_files
  no_log: true
"""

RETURN = r"""
changed_paths:
  description: The directories and files this run changed (in check mode, would change), in the order written.
  returned: always
  type: list
  elements: str
  sample: [/etc/example, /etc/systemd/system/example.service]
"""

import grp
import pwd
import re

from ansible_collections.cpuinfer.llm.plugins.module_utils._persist import FileState, file_state, missing_directories, put_state
from ansible_collections.cpuinfer.llm.plugins.module_utils._runner import Refused, Step, refuse_if, run_module

_OCTAL_MODE = re.compile(r"^0?[0-7]{3,4}$")
_ENTRY = dict(path=dict(type="str", required=True), owner=dict(type="str", default="root"),
              group=dict(type="str", default="root"))

ARGUMENT_SPEC = dict(
    directories=dict(type="list", elements="dict", default=[],
                     options=dict(_ENTRY, mode=dict(type="str", default="0755"))),
    files=dict(type="list", elements="dict", default=[],
               options=dict(_ENTRY, mode=dict(type="str", default="0644"), content=dict(type="str", required=True),
                            secret=dict(type="bool", default=False, no_log=False))),
    root=dict(type="path", default="/"),
)


def _ids(entry, problems):
    try:
        uid = pwd.getpwnam(entry["owner"]).pw_uid
    except KeyError:
        problems.append("%s: no user %s on this host" % (entry["path"], entry["owner"]))
        uid = None
    try:
        gid = grp.getgrnam(entry["group"]).gr_gid
    except KeyError:
        problems.append("%s: no group %s on this host" % (entry["path"], entry["group"]))
        gid = None
    return uid, gid


def wanted_states(params):
    """{path: FileState wanted} for every entry, or Refused naming every problem of the request."""
    problems, wanted, seen = [], {}, set()
    entries = [(entry, None) for entry in params["directories"]] + [(entry, entry["content"]) for entry in params["files"]]
    for entry, content in entries:
        path = entry["path"]
        if not path.startswith("/") or ".." in path.split("/") or path.rstrip("/") in ("", "/"):
            problems.append("%r: give an absolute path below / without '..'" % path)
            continue
        path = path.rstrip("/")
        if path in seen:
            problems.append("%s is listed twice" % path)
        seen.add(path)
        if not _OCTAL_MODE.match(entry["mode"]):
            problems.append("%s: mode %r is not octal text such as 0644" % (path, entry["mode"]))
            continue
        uid, gid = _ids(entry, problems)
        wanted[path] = FileState(content, int(entry["mode"], 8), uid, gid)
    refuse_if(problems)
    return wanted


def parents_to_create(root, paths):
    """Missing parent directories of the wanted paths, outermost first."""
    missing = set()
    for path in paths:
        missing.update(missing_directories(root, path.rsplit("/", 1)[0]))
    return sorted(missing - set(paths), key=lambda p: (p.count("/"), p))


def _describe(path, state, secret):
    if state is None:
        return "", path + " (absent)"
    meta = "%s (%04o %s:%s)" % (path, state.mode, _name(pwd.getpwuid, state.uid), _name(grp.getgrgid, state.gid))
    if state.content is None:
        return "", meta + " directory"
    if secret:
        return "(secret: %d bytes)\n" % len(state.content.encode("utf-8")), meta
    return state.content, meta


def _name(lookup, number):
    try:
        return lookup(number)[0]
    except KeyError:
        return str(number)


def converge(module, journal):
    params, root = module.params, module.params["root"]
    wanted = wanted_states(params)
    secrets = set(entry["path"].rstrip("/") for entry in params["files"] if entry["secret"])
    order = parents_to_create(root, wanted)
    wanted.update((path, FileState(None, 0o755, 0, 0)) for path in order)
    order += sorted((p for p in wanted if p not in order and wanted[p].content is None), key=lambda p: (p.count("/"), p))
    order += [entry["path"].rstrip("/") for entry in params["files"]]

    steps, changed_paths, diffs = [], [], []
    for path in order:
        before, after = file_state(root, path), wanted[path]
        if before == after:
            continue
        if before is not None and (before.content is None) != (after.content is None):
            raise Refused("%s is a %s, not a %s; nothing written" % (
                path, "directory" if before.content is None else "file", "directory" if after.content is None else "file"))
        steps.append(Step("write %s" % path, lambda p=path, s=after: put_state(root, p, s),
                          lambda p=path, s=before: put_state(root, p, s)))
        changed_paths.append(path)
        before_text, before_header = _describe(path, before, path in secrets)
        after_text, after_header = _describe(path, after, path in secrets)
        diffs.append(dict(before=before_text, after=after_text, before_header=before_header, after_header=after_header))
    journal.apply(steps)
    shown = dict(diff=diffs) if module._diff else {}
    return dict(changed=bool(steps), changed_paths=changed_paths, **shown)


def main():
    run_module(ARGUMENT_SPEC, converge)


if __name__ == "__main__":
    main()
