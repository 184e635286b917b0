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
import os
import pwd
import re

from ansible_collections.cpuinfer.llm.plugins.module_utils._paths import link_problem, normal_path, path_problem, within
from ansible_collections.cpuinfer.llm.plugins.module_utils._knobs import knob_path
from ansible_collections.cpuinfer.llm.plugins.module_utils import _persist
from ansible_collections.cpuinfer.llm.plugins.module_utils._persist import FileState, file_state, missing_directories, put_state
from ansible_collections.cpuinfer.llm.plugins.module_utils._runner import Refused, Step, refuse_if

__metaclass__ = type

_OCTAL_MODE = re.compile(r"0?[0-7]{3,4}")
_ENTRY = dict(path=dict(type="str", required=True), owner=dict(type="str", default="root"),
              group=dict(type="str", default="root"))

OPTIONS = dict(
    directories=dict(type="list", elements="dict", default=[],
                     options=dict(_ENTRY, mode=dict(type="raw", default="0755"))),
    files=dict(type="list", elements="dict", default=[],
               options=dict(_ENTRY, mode=dict(type="raw", default="0644"), content=dict(type="str"),
                            secret_content=dict(type="str", no_log=True)),
               mutually_exclusive=[("content", "secret_content")],
               required_one_of=[("content", "secret_content")]),
)
# managed_files and kernel_settings also remove: a role's revert removes its files in the run that writes the rest
ABSENT_OPTIONS = dict(absent=dict(type="list", elements="str", default=[]))


def _text(entry):
    return entry["content"] if entry["content"] is not None else entry["secret_content"]


def _id(lookup, kind, entry, key, problems):
    name = entry[key]
    try:
        return lookup(name)[2]
    except (KeyError, ValueError, TypeError):  # ValueError: a NUL byte in the name
        shown = name if isinstance(name, str) and name.isprintable() else repr(name)
        problems.append("%s: no %s %s on this host" % (entry["path"], kind, shown))
        return None


def _ids(entry, problems):
    return (_id(pwd.getpwnam, "user", entry, "owner", problems),
            _id(grp.getgrnam, "group", entry, "group", problems))


def _mode(path, mode, problems):
    """The mode as a number, or None with the problem named. An integer is what YAML makes of an
    unquoted mode (0644 -> 420, 644 -> 644): which one was meant cannot be known, so it is refused."""
    if isinstance(mode, int) and not isinstance(mode, bool):
        problems.append("%s: mode %d is a number, not octal text (YAML reads an unquoted 0644 as the number 420); "
                        "quote it: mode: '0644'" % (path, mode))
    elif not isinstance(mode, str) or not _OCTAL_MODE.fullmatch(mode):
        problems.append("%s: mode %r is not octal text such as '0644'" % (path, mode))
    else:
        return int(mode, 8)
    return None


def wanted_states(params, root, problems=None):
    """{path: FileState wanted} for every entry, or Refused naming every problem of the request (and those
    given). Paths are compared in their one spelling ('/etc//x/' is /etc/x), and none may lead through a link."""
    problems, wanted, seen = list(problems or []), {}, set()
    entries = [("directories", entry, None) for entry in params["directories"]]
    entries += [("files", entry, _text(entry)) for entry in params["files"]]
    for option, entry, content in entries:
        path, problem = path_problem("%s path" % option, entry["path"])
        if problem:
            problems.append(problem)
            continue
        problems.append(link_problem("%s path" % option, root, path))
        if path in seen:
            problems.append("%s is listed twice" % path)
        seen.add(path)
        mode = _mode(path, entry["mode"], problems)
        uid, gid = _ids(dict(entry, path=path), problems)
        if mode is not None:
            wanted[path] = FileState(content, mode, uid, gid)
    refuse_if([problem for problem in problems if problem])
    return wanted


def missing_required_directories(root, paths):
    """One problem per path of required_directories that is not an existing directory (links followed: they are
    only checked, never written through)."""
    found = []
    for given in paths:
        path, problem = path_problem("required_directories path", given)
        if problem:
            found.append(problem)
        elif not os.path.isdir(knob_path(root, path)):
            found.append("%s does not exist or is not a directory (required: this run does not make it)" % path)
    return found


def validate_problems(params):
    """What is wrong with the validate entries: a path that is not one of the files, an argv without %s."""
    files = set(normal_path(entry["path"]) for entry in params["files"])
    found = []
    for check in params.get("validate") or []:
        if normal_path(check["path"]) not in files:
            found.append("validate: %s is not one of the files written" % check["path"])
        if not any("%s" in word for word in check["argv"]):
            found.append("validate %s: its argv has no %%s for the new content" % check["path"])
    return found


def request_paths(params):
    """Every path the request names (directories, files, absent), each in its one spelling."""
    return set(normal_path(entry["path"]) for entry in params["directories"] + params["files"]) | set(
        normal_path(path) for path in params.get("absent") or [])


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


def absent_paths(params, root):
    """(the absent paths to remove that exist, outermost of each tree only; the request's problems with them).
    A path is refused when a directory or file of the same request is written there or below it."""
    problems, paths = [], []
    written = [normal_path(entry["path"]) for entry in params["directories"] + params["files"]]
    for given in params.get("absent") or []:
        path, problem = path_problem("absent path", given)
        if problem:
            problems.append(problem)
            continue
        problems.append(link_problem("absent path", root, path))
        if path in paths:
            problems.append("%s is listed twice in absent" % path)
        problems += ["%s is both written and removed (absent %s)" % (other, path)
                     for other in written if other and within(other, path)]
        paths.append(path)
    outermost = [path for path in paths if not any(other != path and within(path, other) for other in paths)]
    return [path for path in outermost if os.path.lexists(knob_path(root, path))], [p for p in problems if p]


def _describe_removed(root, path):
    """What removing path takes away, one line: the diff's before (a diff of two empty texts shows nothing)."""
    on_host = knob_path(root, path)
    if os.path.islink(on_host):
        return "a link to %s\n" % os.readlink(on_host)
    if os.path.isdir(on_host):
        return "a directory, with everything in it\n"
    return "a file of %d bytes\n" % os.lstat(on_host).st_size


def removal_step(root, path):
    """A step that removes path (a file, a link, a directory tree): set aside at once, taken back by its
    undo, deleted when the run is finished."""
    aside = []

    def remove():
        aside[:] = [_persist.set_aside(root, path)]

    return Step("remove %s" % path, remove, lambda: _persist.put_back(root, aside[0], path),
                lambda: _persist.discard(root, aside[0]))


def plan(params, root):
    """The steps that remove params' absent paths and make its directories and files as given; Refused
    before any step when the request is invalid or a directory stands where a file should be (or the
    other way round)."""
    removed, problems = absent_paths(params, root)
    wanted = wanted_states(params, root, problems)
    secrets = set(normal_path(entry["path"]) for entry in params["files"] if entry["secret_content"] is not None)
    files = dict((path, state) for path, state in wanted.items() if state.content is not None)
    order = parents_to_create(root, wanted)
    wanted.update((path, FileState(None, 0o755, 0, 0)) for path in order)
    order += sorted((p for p in wanted if p not in order and wanted[p].content is None), key=lambda p: (p.count("/"), p))
    order += [normal_path(entry["path"]) for entry in params["files"]]

    steps, changed_paths, diffs = [removal_step(root, path) for path in removed], list(removed), []
    # a removed file's text is not shown: a role's removals hold its secrets (environment files, keys)
    diffs += [dict(before=_describe_removed(root, path), after="", before_header=path, after_header=path + " (absent)")
              for path in removed]
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
