# -*- coding: utf-8 -*-
# Copyright: cpuinfer.llm contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Files as they are now (sha256, mode, owner ids), reported by a module run that happens anyway, so a
play decides whether to write or copy them without a stat run of its own."""

from __future__ import absolute_import, division, print_function

import hashlib
import stat

from ansible_collections.cpuinfer.llm.plugins.module_utils._paths import path_problem
from ansible_collections.cpuinfer.llm.plugins.module_utils._persist import PersistError, file_or_directory, matching_files

__metaclass__ = type

# a record can be a model of many GiB: hashed in chunks, never held whole
_CHUNK = 1024 * 1024


def problems(option, paths):
    """What is wrong with a list of paths to report, one text per bad path."""
    found = (path_problem(option, path, allow_root=True)[1] for path in paths)
    return [problem for problem in found if problem]


def _record(root, relative):
    """{sha256, mode, uid, gid} of a regular file, 'directory' for a directory, None when nothing is there."""
    found = file_or_directory(root, relative, "report")
    if found is None:
        return None
    path, info = found
    if stat.S_ISDIR(info.st_mode):
        return "directory"
    digest = hashlib.sha256()
    try:
        with open(path, "rb") as handle:
            for chunk in iter(lambda: handle.read(_CHUNK), b""):
                digest.update(chunk)
    except (IOError, OSError) as exc:
        raise PersistError("cannot read %s: %s" % (path, exc))
    return dict(sha256=digest.hexdigest(), mode="%04o" % stat.S_IMODE(info.st_mode), uid=info.st_uid, gid=info.st_gid)


def records(root, paths):
    """{path: {sha256, mode, uid, gid} or None} of the named files and of the regular files directly in
    the named directories (a missing directory adds nothing). Check paths with problems() first."""
    found = {}
    for path in paths:
        record = _record(root, path)
        if record != "directory":
            found[path] = record
            continue
        for inside in matching_files(root, [path.rstrip("/") + "/*"]):
            found[inside] = _record(root, inside)
    return found
