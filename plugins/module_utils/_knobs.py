# -*- coding: utf-8 -*-
# Copyright: cpuinfer.llm contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Kernel knob files (sysfs, procfs, cgroupfs): read, normalise, write, and undo a run's writes.

Private to the collection. Every path is taken relative to a root, so units run on a tmp tree.
"""

from __future__ import absolute_import, division, print_function

import errno
import os
import re

from ansible_collections.cpuinfer.llm.plugins.module_utils._errors import HostError

__metaclass__ = type

_BRACKETED = re.compile(r"\[([^\]]+)\]")


class KnobError(HostError):
    """A knob could not be read or written; the message names the file and the kernel's reason,
    errno keeps the kernel's error number (None when there was none)."""

    def __init__(self, message, errno_value=None):
        super(KnobError, self).__init__(message)
        self.errno = errno_value


def knob_path(root, relative):
    """Join a root with a kernel path such as '/sys/kernel/mm/...', refusing '..' escapes."""
    relative = relative.lstrip("/")
    if ".." in relative.split("/"):
        raise KnobError("refusing a path that leaves the root: %s" % relative)
    return os.path.join(root, relative)


def read_knob(root, relative):
    """The file's text, stripped. Bytes that are not UTF-8 (a firmware's model name) read as U+FFFD:
    whatever parses a knob then refuses them as it refuses any other word it does not know."""
    path = knob_path(root, relative)
    try:
        with open(path, "rb") as handle:
            return handle.read().decode("utf-8", "replace").strip()
    except (IOError, OSError) as exc:
        raise KnobError("cannot read %s: %s" % (path, os.strerror(exc.errno) if exc.errno else exc))


def knob_exists(root, relative):
    return os.path.exists(knob_path(root, relative))


def make_knob_directory(root, relative, error, what):
    """mkdir below root (a cgroup, a resctrl group: the kernel fills it); a refusal raises error naming what."""
    try:
        os.mkdir(knob_path(root, relative))
    except OSError as exc:
        raise error("cannot create %s: %s" % (what, os.strerror(exc.errno)))


def remove_knob_directory(root, relative, error, what):
    """rmdir below root; a refusal (busy, not empty) raises error naming what."""
    try:
        os.rmdir(knob_path(root, relative))
    except OSError as exc:
        raise error("cannot remove %s: %s" % (what, os.strerror(exc.errno)))


def write_knob(root, relative, value):
    """Write one value the way the kernel expects it: a single write() of the whole string."""
    path = knob_path(root, relative)
    data = str(value)
    try:
        encoded = data.encode("ascii")
    except UnicodeError:
        raise KnobError("cannot write %s: %r is not ASCII, which kernel knobs take; nothing was written to it" % (path, data))
    try:
        fd = os.open(path, os.O_WRONLY | os.O_TRUNC)
    except (IOError, OSError) as exc:
        raise KnobError("cannot open %s for writing: %s" % (path, os.strerror(exc.errno)))
    try:
        os.write(fd, encoded)
    except (IOError, OSError) as exc:
        reason = os.strerror(exc.errno) if exc.errno else str(exc)
        if exc.errno == errno.EINVAL:
            reason += " (the kernel refused the value %r)" % data
        raise KnobError("cannot write %s: %s" % (path, reason), exc.errno)
    finally:
        os.close(fd)


def parse_selection(text):
    """'always [madvise] never' -> ('madvise', ['always', 'madvise', 'never'])."""
    selected = _BRACKETED.search(text)
    choices = [word.strip("[]") for word in text.split()]
    return (selected.group(1) if selected else None), choices
