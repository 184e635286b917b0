# -*- coding: utf-8 -*-
# Copyright: cpuinfer.llm contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Files the collection writes on hosts (sysctl.d and tmpfiles.d drop-ins, units, environment files):
read and replace atomically under a root, with their mode and owner, and put back as they were."""

from __future__ import absolute_import, division, print_function

import collections
import fnmatch
import glob
import os
import shutil
import stat
import tempfile

from ansible_collections.cpuinfer.llm.plugins.module_utils._errors import HostError
from ansible_collections.cpuinfer.llm.plugins.module_utils._knobs import knob_path

__metaclass__ = type

MANAGED_HEADER = "# Managed by cpuinfer.llm ({module}); local edits are overwritten.\n"


class PersistError(HostError):
    """A persistence file could not be written or removed."""


# Where the boot-time appliers read drop-ins (sysctl.d(5), tmpfiles.d(5)): files named *.conf (not hidden)
# directly in these directories. A drop-in anywhere else is written and never applied.
READ_AT_BOOT = {
    "systemd-sysctl": ("/etc/sysctl.d", "/run/sysctl.d", "/usr/local/lib/sysctl.d", "/usr/lib/sysctl.d", "/lib/sysctl.d"),
    "systemd-tmpfiles": ("/etc/tmpfiles.d", "/run/tmpfiles.d", "/usr/local/lib/tmpfiles.d", "/usr/lib/tmpfiles.d",
                         "/lib/tmpfiles.d"),
}


def unread_dropin_problem(option, given, normal, applier):
    """Why applier would never read the drop-in given (normal: its normal path), or None."""
    directory, name = normal.rsplit("/", 1)
    if given.endswith("/"):
        why = "ends in '/', a directory"
    elif name.startswith(".") or not name.endswith(".conf") or name == ".conf":
        why = "is not named *.conf"
    elif (directory or "/") not in READ_AT_BOOT[applier]:
        why = "is not directly in one of its directories"
    else:
        return None
    return "%s: %s %s; %s reads only *.conf files in %s, so this drop-in would never be applied at boot" % (
        option, given, why, applier, ", ".join(READ_AT_BOOT[applier]))


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
    """The file's text, or None when it does not exist. Bytes that are not UTF-8 read as U+FFFD: such a
    file never equals what a module renders, so it is replaced, never parsed as ours."""
    path = knob_path(root, relative)
    try:
        with open(path, "rb") as handle:
            return handle.read().decode("utf-8", "replace")
    except (IOError, OSError):
        return None


def replace_file(root, relative, content, mode=0o644, uid=None, gid=None):
    """Write content to a temporary file beside the target and rename it over the target,
    so a reader (or a crash) never sees a half-written drop-in. uid/gid None: the writer's.
    The directory must exist: a run creates directories as steps of their own (create_parents),
    so that they are undone with it. Whatever fails, no temporary file stays behind."""
    path = knob_path(root, relative)
    try:
        data = content.encode("utf-8")
    except (AttributeError, UnicodeError) as exc:
        raise PersistError("cannot write %s: its content is not text that UTF-8 can hold (%s)" % (path, exc))
    try:
        fd, temporary = tempfile.mkstemp(prefix=".cpuinfer-", dir=os.path.dirname(path))
    except (IOError, OSError) as exc:
        raise PersistError("cannot write %s: %s" % (path, exc))
    try:
        with os.fdopen(fd, "wb") as handle:
            handle.write(data)
            handle.flush()
            os.fsync(handle.fileno())
        if uid is not None or gid is not None:
            os.chown(temporary, -1 if uid is None else uid, -1 if gid is None else gid)
        os.chmod(temporary, mode)
        os.rename(temporary, path)
    except BaseException as exc:
        if os.path.lexists(temporary):
            os.unlink(temporary)
        if isinstance(exc, (IOError, OSError, TypeError, ValueError, OverflowError)):
            raise PersistError("cannot write %s: %s" % (path, exc))
        raise


def create_parents(root, relative):
    """Create the missing directories above relative (0755, outermost first) and return them, for
    remove_directories to take back; on a failure the ones made so far are removed again."""
    created = []
    for directory in missing_directories(root, relative.rsplit("/", 1)[0]):
        try:
            os.mkdir(knob_path(root, directory), 0o755)
        except (IOError, OSError) as exc:
            remove_directories(root, created)
            raise PersistError("cannot create %s: %s" % (knob_path(root, directory), exc.strerror or exc))
        created.append(directory)
    return created


def remove_directories(root, created):
    """rmdir what create_parents made, innermost first."""
    for directory in reversed(created):
        try:
            os.rmdir(knob_path(root, directory))
        except (IOError, OSError) as exc:
            raise PersistError("cannot remove %s: %s" % (knob_path(root, directory), exc.strerror or exc))


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


# What a file or directory is now: text (None for a directory), permission bits, owner, group.
FileState = collections.namedtuple("FileState", "content mode uid gid")


def file_or_directory(root, relative, doing):
    """(path, lstat result) of a regular file or directory, None when nothing is there; anything else
    (a link, a device) is refused, naming what the caller was doing."""
    path = knob_path(root, relative)
    try:
        info = os.lstat(path)
    except (IOError, OSError):
        return None
    if not (stat.S_ISDIR(info.st_mode) or stat.S_ISREG(info.st_mode)):
        raise PersistError("%s is neither a file nor a directory; refusing to %s it" % (path, doing))
    return path, info


def file_state(root, relative):
    """The state of a regular file or directory, or None when nothing is there.
    A file that is not UTF-8 text reads as content '' so that it is replaced, never parsed."""
    found = file_or_directory(root, relative, "replace")
    if found is None:
        return None
    path, info = found
    mode = stat.S_IMODE(info.st_mode)
    if stat.S_ISDIR(info.st_mode):
        return FileState(None, mode, info.st_uid, info.st_gid)
    try:
        with open(path, "rb") as handle:
            data = handle.read()
    except (IOError, OSError) as exc:
        raise PersistError("cannot read %s: %s" % (path, exc))
    try:
        content = data.decode("utf-8")
    except UnicodeDecodeError:
        content = ""
    return FileState(content, mode, info.st_uid, info.st_gid)


def missing_directories(root, relative):
    """relative and each of its parents that does not exist yet, outermost first ([] when it exists)."""
    missing = []
    while relative and file_state(root, relative) is None:
        missing.insert(0, relative)
        relative = relative.rsplit("/", 1)[0]
    return missing


def put_state(root, relative, state):
    """Make the file or directory at relative what state says; None removes it (a directory
    only when empty: put_state undoes what this collection created, nothing else)."""
    path = knob_path(root, relative)
    current = file_state(root, relative)
    try:
        if state is None:
            if current is not None and current.content is None:
                os.rmdir(path)
            elif current is not None:
                os.unlink(path)
            return
        if state.content is None:
            if current is None:
                os.mkdir(path, state.mode)
            os.chown(path, state.uid, state.gid)
            os.chmod(path, state.mode)
            return
    except (IOError, OSError) as exc:
        raise PersistError("cannot set %s: %s" % (path, exc.strerror or exc))
    replace_file(root, relative, state.content, state.mode, state.uid, state.gid)


def set_aside(root, relative):
    """Rename the file, link or directory tree at relative to a hidden name in its own directory and return
    that name (relative): the rename is atomic and takes no copy, so put_back undoes a removal of any size,
    and discard makes it final once the whole run succeeded. The name ends in numbers, so a copy a killed
    run left behind is no *.conf drop-in or unit name that sysctl, tmpfiles or systemd would load."""
    path = knob_path(root, relative)
    directory, name = os.path.split(path)
    for attempt in range(100):
        aside = os.path.join(directory, ".cpuinfer-removed-%s.%d.%d" % (name, os.getpid(), attempt))
        if not os.path.lexists(aside):
            break
    else:
        raise PersistError("cannot remove %s: no free name to set it aside in %s" % (path, directory))
    try:
        os.rename(path, aside)
    except (IOError, OSError) as exc:
        raise PersistError("cannot remove %s: %s" % (path, exc.strerror or exc))
    return relative.rsplit("/", 1)[0] + "/" + os.path.basename(aside)


def put_back(root, aside, relative):
    """Undo set_aside."""
    try:
        os.rename(knob_path(root, aside), knob_path(root, relative))
    except (IOError, OSError) as exc:
        raise PersistError("cannot put %s back from %s: %s" % (relative, aside, exc.strerror or exc))


def discard(root, aside):
    """Delete what set_aside kept (a directory with everything in it; a link, not what it points to)."""
    path = knob_path(root, aside)
    try:
        if os.path.isdir(path) and not os.path.islink(path):
            shutil.rmtree(path)
        else:
            os.unlink(path)
    except (IOError, OSError) as exc:
        raise PersistError("cannot delete %s: %s" % (path, exc.strerror or exc))


def path_matches(path, patterns):
    """Whether an absolute path matches one of the absolute glob patterns as matching_files finds it:
    component by component, and a component starting with '.' only where the pattern's does."""
    parts = path.split("/")
    for pattern in patterns:
        wanted = pattern.split("/")
        if len(wanted) == len(parts) and all(
                fnmatch.fnmatchcase(part, want) and (not part.startswith(".") or want.startswith("."))
                for part, want in zip(parts, wanted)):
            return True
    return False


def matching_files(root, patterns):
    """The regular files below root that match the absolute glob patterns, as absolute paths, sorted."""
    found = set()
    prefix = knob_path(root, "/").rstrip("/")
    for pattern in patterns:
        for path in glob.glob(knob_path(root, pattern)):
            if os.path.isfile(path) and not os.path.islink(path):
                found.add("/" + path[len(prefix):].lstrip("/"))
    return sorted(found)
