# -*- coding: utf-8 -*-
# Copyright: cpuinfer.llm contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Paths a request names on a host: one spelling per file, and never a way out of the root.

'/etc//x', '/etc/./x' and '/etc/x/' name one file; compared as given they would pass "listed twice"
and the drop-in ownership checks. A directory on the way that is a symbolic link gives a file a
second name, and can lead out of the root: such a path is refused, with the path it leads to."""

from __future__ import absolute_import, division, print_function

import os
import re

from ansible_collections.cpuinfer.llm.plugins.module_utils._knobs import knob_path

__metaclass__ = type

_SLASHES = re.compile(r"/+")


def normal_path(path):
    """The one spelling of an absolute path ('//' and '/./' folded, no trailing '/'), or None when it
    is not an absolute path without '..' and NUL bytes (or not text at all)."""
    if not isinstance(path, str) or not path.startswith("/") or "\x00" in path:
        return None
    parts = [part for part in _SLASHES.split(path) if part not in ("", ".")]
    if ".." in parts:
        return None
    return "/" + "/".join(parts)


def path_problem(option, path, allow_root=False, noun="path"):
    """(normal path, None), or (None, what is wrong with it naming the option)."""
    normal = normal_path(path)
    if normal is None or (normal == "/" and not allow_root):
        return None, "%s: %r is not an absolute %s below / without '..' or NUL bytes" % (option, path, noun)
    return normal, None


def within(path, directory):
    """Whether the normal path is directory or lies below it."""
    return path == directory or path.startswith(directory.rstrip("/") + "/")


def linked_ancestor(root, path):
    """The first directory on the way to path (path itself excluded) that is a symbolic link below
    root, as (link, its target); None when there is none. path: a normal absolute path."""
    parts = path.strip("/").split("/")[:-1]
    for depth in range(1, len(parts) + 1):
        relative = "/" + "/".join(parts[:depth])
        on_host = knob_path(root, relative)
        if os.path.islink(on_host):
            return relative, os.readlink(on_host)
        if not os.path.isdir(on_host):
            return None  # nothing below a missing directory can be a link yet
    return None


def link_problem(option, root, path):
    """What is wrong with writing path below root through a linked directory, or None."""
    found = linked_ancestor(root, path)
    if found is None:
        return None
    link, target = found
    return ("%s: %s leads through %s, a symbolic link to %s; give the path it leads to (a file has one name, "
            "and a link can lead out of root)" % (option, path, link, target))
