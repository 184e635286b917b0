# -*- coding: utf-8 -*-
# Copyright: cpuinfer.llm contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Releases of a set of files (a service's units, environment files, keys): which one runs now, which
one ran before, and what going back means. Pure planning on FileState maps; reading and writing is
_persist's.

A record holds two releases, each a map path -> FileState: 'current', the release recorded last, and
'previous', the one before it (None: none known). A converge records after its writes, so a converge
that changes nothing leaves the record as it is and the release before the change stays reachable.
A converge that failed between its writes and its record leaves files on disk that differ from
'current': going back then means 'current' (the last release that was recorded), else 'previous'.
After going back to 'previous' the record names the release it left ('rolled_back_from'), so that
going back again changes nothing instead of failing: only two releases are kept."""

from __future__ import absolute_import, division, print_function

import hashlib
import json

from ansible_collections.cpuinfer.llm.plugins.module_utils._paths import normal_path
from ansible_collections.cpuinfer.llm.plugins.module_utils._persist import FileState

__metaclass__ = type

RECORD_VERSION = 1


def release_id(files):
    """A short, stable name for a release: sha256 over its paths, contents, modes and owners."""
    if files is None:
        return None
    canonical = json.dumps(sorted((path, list(state)) for path, state in files.items()))
    return hashlib.sha256(canonical.encode("utf-8")).hexdigest()[:12]


def encode_record(current, previous, rolled_back_from=None):
    def files(release):
        if release is None:
            return None
        return dict((path, state._asdict()) for path, state in sorted(release.items()))
    return json.dumps(dict(version=RECORD_VERSION, current=files(current), previous=files(previous),
                           rolled_back_from=rolled_back_from), indent=1, sort_keys=True) + "\n"


class RecordUnreadable(ValueError):
    """The record file is not a record this code wrote."""


def decode_record(text):
    """(current, previous, rolled_back_from) from a record's text; None for text None (no record yet)."""
    if text is None:
        return None
    try:
        data = json.loads(text)
        if data.get("version") != RECORD_VERSION:
            raise RecordUnreadable("record version %r, this code reads %d" % (data.get("version"), RECORD_VERSION))

        def files(raw):
            if raw is None:
                return None
            return dict(_entry(path, state) for path, state in raw.items())
        rolled_back_from = data.get("rolled_back_from")
        if rolled_back_from is not None and not isinstance(rolled_back_from, str):
            raise RecordUnreadable("rolled_back_from is %r, not a release name" % (rolled_back_from,))
        return files(data["current"]), files(data["previous"]), rolled_back_from
    except (ValueError, TypeError, KeyError, AttributeError) as exc:
        raise RecordUnreadable(str(exc))


def _whole(value, top):
    return isinstance(value, int) and not isinstance(value, bool) and 0 <= value <= top


def _entry(path, state):
    """(path, FileState) of one recorded file, checked field by field: a record edited by hand must be
    refused as a whole before anything is written from it, not fail half-way through a rollback."""
    if normal_path(path) != path:
        raise RecordUnreadable("%r is not an absolute path in its one spelling" % (path,))
    state = FileState(**state)
    if not isinstance(state.content, str):
        raise RecordUnreadable("%s: content is %r, not text" % (path, type(state.content).__name__))
    if not _whole(state.mode, 0o7777) or not _whole(state.uid, 2 ** 32 - 2) or not _whole(state.gid, 2 ** 32 - 2):
        raise RecordUnreadable("%s: mode, uid or gid is not a whole number in range (%r, %r, %r)"
                               % (path, state.mode, state.uid, state.gid))
    return path, state


def paths_that_differ(one, other):
    """Paths whose state differs between two releases (absent on one side counts), sorted."""
    one, other = one or {}, other or {}
    return sorted(path for path in set(one) | set(other) if one.get(path) != other.get(path))


def plan_record(on_disk, record):
    """The record after recording on_disk, or None when it stays as it is."""
    if record is None:
        return on_disk, None, None
    current = record[0]
    if on_disk == current:
        return None
    return on_disk, current, None


def plan_rollback(on_disk, record):
    """(target release, record after going back), or (None, reason) when there is nothing to go back to.
    Where the host already went back and nothing changed since, the target is what is on disk."""
    if record is None:
        return None, "no release has been recorded on this host"
    current, previous, rolled_back_from = record
    if on_disk != current:
        return current, (current, previous, None)
    if rolled_back_from is not None:
        return current, record
    if previous is None:
        return None, "only one release has been recorded on this host; there is no earlier one to go back to"
    return previous, (previous, None, release_id(current))
