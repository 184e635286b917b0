# -*- coding: utf-8 -*-
# Copyright: cpuinfer.llm contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""A set of directories and files to make exactly as given, planned as journal steps: the options and
the plan that managed_files and release share (release writes a service's files and records them as a
release in the same module run, so a converge pays one round trip for both).

A file's text is given as `content`, or as `secret_content` for secrets: that option is no_log, so
Ansible keeps the text out of the module's logged invocation, its result and the host's journal, and
the diff shows its size only. No task-level no_log is needed, which would hide every other file's diff."""

from __future__ import absolute_import, division, print_function

import grp
import pwd
import re

from ansible_collections.cpuinfer.llm.plugins.module_utils._persist import FileState, file_state, missing_directories, put_state
from ansible_collections.cpuinfer.llm.plugins.module_utils._runner import Refused, Step, refuse_if

__metaclass__ = type

_OCTAL_MODE = re.compile(r"^0?[0-7]{3,4}$")
_ENTRY = dict(path=dict(type="str", required=True), owner=dict(type="str", default="root"),
              group=dict(type="str", default="root"))

OPTIONS = dict(
    directories=dict(type="list", elements="dict", default=[],
                     options=dict(_ENTRY, mode=dict(type="str", default="0755"))),
    files=dict(type="list", elements="dict", default=[],
               options=dict(_ENTRY, mode=dict(type="str", default="0644"), content=dict(type="str"),
                            secret_content=dict(type="str", no_log=True)),
               mutually_exclusive=[("content", "secret_content")],
               required_one_of=[("content", "secret_content")]),
)


def _text(entry):
    return entry["content"] if entry["content"] is not None else entry["secret_content"]


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
    entries = [(entry, None) for entry in params["directories"]] + [(entry, _text(entry)) for entry in params["files"]]
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


class Plan:
    """steps: journal steps in write order; changed_paths: the paths they write; diffs: one per path;
    files: {path: FileState} of every file as it will be after the steps (directories left out)."""

    def __init__(self, steps, changed_paths, diffs, files):
        self.steps, self.changed_paths, self.diffs, self.files = steps, changed_paths, diffs, files


def plan(params, root):
    """The steps that make params' directories and files as given; Refused before any step when the
    request is invalid or a directory stands where a file should be (or the other way round)."""
    wanted = wanted_states(params)
    secrets = set(entry["path"].rstrip("/") for entry in params["files"] if entry["secret_content"] is not None)
    files = dict((path, state) for path, state in wanted.items() if state.content is not None)
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
    return Plan(steps, changed_paths, diffs, files)
