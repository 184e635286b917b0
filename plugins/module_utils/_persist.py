# -*- coding: utf-8 -*-
# Copyright: cpuinfer.llm contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Persistence files (sysctl.d, tmpfiles.d drop-ins): read and replace atomically under a root."""

from __future__ import absolute_import, division, print_function

import os
import tempfile

from ansible_collections.cpuinfer.llm.plugins.module_utils._errors import HostError
from ansible_collections.cpuinfer.llm.plugins.module_utils._knobs import knob_path

__metaclass__ = type

MANAGED_HEADER = "# Managed by cpuinfer.llm ({module}); local edits are overwritten.\n"


class PersistError(HostError):
    """A persistence file could not be written or removed."""


def applied_at_boot_warning(root, relative, applier):
    """None on a host booted by systemd; else a warning that nothing applies the drop-in at boot.

    /run/systemd/system exists exactly when systemd is PID 1 (sd_booted(3)); without it
    systemd-tmpfiles and systemd-sysctl do not run at boot."""
    if os.path.isdir(knob_path(root, "/run/systemd/system")):
        return None
    return ("this host does not run systemd as PID 1 (no /run/systemd/system): %s is written, but nothing "
            "applies it at boot here (%s runs only under systemd); apply the values from this host's init "
            "system, or the running values are lost at the next reboot" % (relative, applier))


def read_file(root, relative):
    """The file's text, or None when it does not exist."""
    path = knob_path(root, relative)
    try:
        with open(path, "r") as handle:
            return handle.read()
    except (IOError, OSError):
        return None


def replace_file(root, relative, content, mode=0o644):
    """Write content to a temporary file beside the target and rename it over the target,
    so a reader (or a crash) never sees a half-written drop-in."""
    path = knob_path(root, relative)
    directory = os.path.dirname(path)
    try:
        if not os.path.isdir(directory):
            os.makedirs(directory, 0o755)
        fd, temporary = tempfile.mkstemp(prefix=".cpuinfer-", dir=directory)
    except (IOError, OSError) as exc:
        raise PersistError("cannot write %s: %s" % (path, exc))
    try:
        with os.fdopen(fd, "w") as handle:
            handle.write(content)
            handle.flush()
            os.fsync(handle.fileno())
        os.chmod(temporary, mode)
        os.rename(temporary, path)
    except (IOError, OSError) as exc:
        if os.path.exists(temporary):
            os.unlink(temporary)
        raise PersistError("cannot write %s: %s" % (path, exc))


def remove_file(root, relative):
    path = knob_path(root, relative)
    try:
        os.unlink(path)
    except (IOError, OSError) as exc:
        if os.path.exists(path):
            raise PersistError("cannot remove %s: %s" % (path, exc))


def restore_file(root, relative, previous_content):
    """Put a persistence file back as it was (None: it did not exist)."""
    if previous_content is None:
        remove_file(root, relative)
    else:
        replace_file(root, relative, previous_content)
