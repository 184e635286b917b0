#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright: cpuinfer.llm contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import absolute_import, division, print_function

__metaclass__ = type

DOCUMENTATION = r"""
module: release
short_description: Record a service's files as a release, or go back to the release before
version_added: 1.0.0
description:
  - A release is the set of files matching O(patterns) (a service's units, environment files, keys)
    as they are on the host. The module keeps a record of two releases per O(name), root-only under
    O(store), the current one and the one before it.
  - O(state=recorded), run after a converge's writes, records the files as they are now. When they
    equal the current release nothing changes; otherwise the current release becomes the previous one.
    A converge that changes nothing therefore keeps the previous release reachable.
  - With O(directories) and O(files), O(state=recorded) first makes them exactly as given (as
    M(cpuinfer.llm.managed_files) does) and then records the release, in the same module run, so a
    service's files and their release cost one round trip and no failure can fall between the two.
  - O(state=rolled_back) writes the files of the release to go back to and removes files of the set
    that it did not have. That release is the current one when the files on disk differ from it (a
    converge failed after writing and before recording), else the previous one. Afterwards it is the
    current release and, when it was the previous one, no earlier release is known; running it again
    then changes nothing.
  - Refuses, writing nothing, when there is no release to go back to (nothing recorded, or only one
    release and no rollback yet). Every write is undone when
    one fails. Check mode reports what would change. The diff shows each written file (a
    O(files[].secret_content) only its size), then the record as paths and release names, never
    file contents (environment files and keys are secrets).
author: cpuinfer.llm maintainers (@cpuinfer)
extends_documentation_fragment:
  - cpuinfer.llm.managed_files
options:
  name:
    description: The release set's name (letters, digits, C(_), C(-)); the record is O(store)/NAME.json.
    type: str
    required: true
  patterns:
    description: Absolute glob patterns of the files that make a release.
    type: list
    elements: str
    required: true
  state:
    description: Record the files as a release, or go back to the release before.
    type: str
    choices: [recorded, rolled_back]
    default: recorded
  store:
    description: Directory of the records (created C(0700) root).
    type: path
    default: /var/lib/cpuinfer/releases
  root:
    description: Root of the file tree (a test tree); paths are taken below it.
    type: path
    default: /
notes:
  - Directories are not part of a release, and only the files matching O(patterns) are. Large
    artefacts (engine builds, models) belong under paths named by release, such as a build key or a
    sha256, so that a release's files keep pointing at them.
"""

EXAMPLES = r"""
- name: Write the service's unit and key and record them as its release, in one module run
  cpuinfer.llm.release:
    name: llama_server
    patterns:
      - /etc/systemd/system/cpuinfer-llama-*.service
      - /etc/cpuinfer/llama-server/*
    directories:
      - path: /etc/cpuinfer/llama-server
        mode: "0700"
    files:
      - path: /etc/systemd/system/cpuinfer-llama-tiny.service
        content: "{{ lookup('ansible.builtin.template', 'llama-server.service.j2') }}"
      - path: /etc/cpuinfer/llama-server/tiny.key
        secret_content: "{{ api_key }}"
        mode: "0600"
  register: written

- name: Record the service's files after writing them
  cpuinfer.llm.release:
    name: llama_server
    patterns:
      - /etc/systemd/system/cpuinfer-llama-*.service
      - /etc/cpuinfer/llama-server/*

- name: Go back to the release before
  cpuinfer.llm.release:
    name: llama_server
    patterns:
      - /etc/systemd/system/cpuinfer-llama-*.service
      - /etc/cpuinfer/llama-server/*
    state: rolled_back
  register: back
"""

RETURN = r"""
release:
  description: Name (a short hash) of the current release after the run.
  returned: always
  type: str
  sample: 3f2a9c01b7de
previous_release:
  description: Name of the release before it, null when none is known.
  returned: always
  type: str
  sample: 91c0de4412aa
rolled_back_from:
  description: The release the last rollback left, until a new release is recorded; null otherwise.
  returned: always
  type: str
  sample: null
changed_paths:
  description: >-
    Files that differ between the two releases the run moved between (recorded - the previous and the
    new current release; rolled_back - the files written or removed).
  returned: always
  type: list
  elements: str
  sample: [/etc/systemd/system/cpuinfer-llama-tiny.service]
written_paths:
  description: >-
    The directories and files of O(directories) and O(files) this run changed (in check mode, would
    change), in the order written.
  returned: always
  type: list
  elements: str
  sample: [/etc/systemd/system/cpuinfer-llama-tiny.service]
removed_paths:
  description: Files the rollback removed (the release gone back to did not have them).
  returned: always
  type: list
  elements: str
  sample: []
"""

import re

from ansible_collections.cpuinfer.llm.plugins.module_utils import _managed_files, _release
from ansible_collections.cpuinfer.llm.plugins.module_utils._paths import link_problem, path_problem
from ansible_collections.cpuinfer.llm.plugins.module_utils._persist import (
    FileState, file_state, matching_files, missing_directories, path_matches, put_state)
from ansible_collections.cpuinfer.llm.plugins.module_utils._runner import Refused, Step, refuse_if, run_module

ARGUMENT_SPEC = dict(
    _managed_files.OPTIONS,
    name=dict(type="str", required=True),
    patterns=dict(type="list", elements="str", required=True),
    state=dict(type="str", choices=["recorded", "rolled_back"], default="recorded"),
    store=dict(type="path", default="/var/lib/cpuinfer/releases"),
    root=dict(type="path", default="/"),
)


def _store_matches(pattern, store):
    """Whether the pattern can match a file in the store or below it (component by component)."""
    wanted, parts = pattern.strip("/").split("/"), store.strip("/").split("/")
    return len(wanted) > len(parts) and path_matches(store, ["/" + "/".join(wanted[:len(parts)])])


def _check(params, root):
    """(store, patterns) in their one spelling, or Refused naming every problem of the request."""
    problems = []
    if not isinstance(params["name"], str) or not re.fullmatch(r"[A-Za-z0-9_-]+", params["name"]):
        problems.append("name %r: letters, digits, '_' and '-' only" % params["name"])
    store, problem = path_problem("store", params["store"])
    problems += [problem, store and link_problem("store", root, store + "/record")]
    if not params["patterns"]:
        problems.append("patterns: give at least one")
    patterns = []
    for given in params["patterns"]:
        pattern, problem = path_problem("patterns", given, noun="pattern")
        if problem:
            problems.append(problem)
        elif store and (_store_matches(pattern, store) or path_matches(store, [pattern])):
            problems.append("pattern %r can match the record store %s or its records" % (given, store))
        else:
            patterns.append(pattern)
    if params["state"] == "rolled_back" and (params["directories"] or params["files"]):
        problems.append("directories and files are written with state=recorded only; a rollback writes a recorded release")
    refuse_if([problem for problem in problems if problem])
    return store, patterns


def _on_disk(root, patterns):
    return dict((path, file_state(root, path)) for path in matching_files(root, patterns))


def _record_steps(root, store, record_path, text):
    """Steps that write the record, creating the store (0700) and its missing parents (0755) first."""
    steps = [_directory_step(root, path, 0o700 if path == store else 0o755) for path in missing_directories(root, store)]
    before = file_state(root, record_path)
    steps.append(Step("write %s" % record_path, lambda: put_state(root, record_path, FileState(text, 0o600, 0, 0)),
                      lambda: put_state(root, record_path, before)))
    return steps


def _refuse_outside(root, paths, patterns):
    """A release is the files its patterns match: a recorded path outside them (the patterns changed
    since, or the record was edited) or through a linked directory is not written back."""
    problems = ["the release to go back to holds %s, which none of the patterns match" % path
                for path in paths if not path_matches(path, patterns)]
    problems += [link_problem("recorded path", root, path) for path in paths]
    problems = [problem for problem in problems if problem]
    if problems:
        raise Refused("; ".join(problems) + "; nothing written")


def _directory_step(root, path, mode):
    """A step that creates a directory of root's (its undo removes it again)."""
    return Step("create %s" % path, lambda: put_state(root, path, FileState(None, mode, 0, 0)),
                lambda: put_state(root, path, None))


def _parent_steps(root, paths):
    """Steps that create the directories a rollback's files need."""
    return [_directory_step(root, path, 0o755) for path in _managed_files.parents_to_create(root, paths)]


def _read_record(root, record_path):
    state = file_state(root, record_path)
    try:
        return _release.decode_record(None if state is None else state.content)
    except _release.RecordUnreadable as exc:
        raise Refused("%s is not a release record this collection can read (%s); move it aside to start "
                      "a new record, nothing written" % (record_path, exc))


def _diff(record_path, before, after):
    def text(record):
        if record is None:
            return "(no record)\n"
        current, previous, rolled_back_from = record
        return "current: %s\n%sprevious: %s\nrolled back from: %s\n" % (
            _release.release_id(current), "".join("  %s\n" % path for path in sorted(current or {})),
            _release.release_id(previous), rolled_back_from)
    return dict(before=text(before), after=text(after), before_header=record_path, after_header=record_path)


def converge(module, journal):
    params, root = module.params, module.params["root"]
    store, patterns = _check(params, root)
    record_path = "%s/%s.json" % (store, params["name"])
    record = _read_record(root, record_path)
    writes = _managed_files.plan(params, root)
    on_disk = _on_disk(root, patterns)
    on_disk.update((path, state) for path, state in writes.files.items() if path_matches(path, patterns))
    steps, removed = list(writes.steps), []

    if params["state"] == "recorded":
        after = _release.plan_record(on_disk, record)
        changed_paths = _release.paths_that_differ(record[0] if record else None, on_disk) if after else []
    else:
        target, after = _release.plan_rollback(on_disk, record)
        if target is None:
            raise Refused("no release of %s to go back to: %s; nothing written" % (params["name"], after))
        changed_paths = _release.paths_that_differ(on_disk, target)
        _refuse_outside(root, changed_paths, patterns)
        steps += _parent_steps(root, [path for path in changed_paths if target.get(path) is not None])
        for path in changed_paths:
            wanted = target.get(path)
            steps.append(Step("%s %s" % ("remove" if wanted is None else "write", path),
                              lambda p=path, s=wanted: put_state(root, p, s),
                              lambda p=path, s=on_disk.get(path): put_state(root, p, s)))
            if wanted is None:
                removed.append(path)
        if after == record:
            after = None

    if after is not None:
        steps += _record_steps(root, store, record_path, _release.encode_record(*after))
    journal.apply(steps)
    final = after or record or (None, None, None)
    result = dict(changed=bool(steps), changed_paths=changed_paths, removed_paths=removed,
                  written_paths=writes.changed_paths, release=_release.release_id(final[0]),
                  previous_release=_release.release_id(final[1]), rolled_back_from=final[2])
    if module._diff:
        result["diff"] = writes.diffs + ([_diff(record_path, record, after)] if after is not None else [])
    return result


def main():
    run_module(ARGUMENT_SPEC, converge)


if __name__ == "__main__":
    main()
