# -*- coding: utf-8 -*-
# Copyright: cpuinfer.llm contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The C and C++ runtimes a host's programs load: glibc's release and libstdc++'s highest
GLIBCXX_ symbol version, read from the files under a root (what a shipped binary will meet); and the
release of the systemd that runs the units roles write (which settings it knows)."""

from __future__ import absolute_import, division, print_function

import glob
import os
import re

__metaclass__ = type

# Where distributions put the libraries: Debian's multiarch directories, then lib64 (RPM family).
LIBRARY_DIRS = ("usr/lib/*-linux-gnu", "lib/*-linux-gnu", "usr/lib64", "lib64", "usr/lib", "lib")
# Every glibc's libc.so.6 carries its banner: "GNU C Library (...) release version 2.36."
_GLIBC_BANNER = re.compile(br"GNU C Library [^\n]*?release version ([0-9]+\.[0-9]+)")
# libstdc++.so.6.0.N defines GLIBCXX_3.4.N as its newest symbol version (GCC 5 onwards).
_LIBSTDCXX_FILE = re.compile(r"^libstdc\+\+\.so\.6\.0\.([0-9]+)\Z")
_READ_LIMIT = 64 * 1024 * 1024
# systemd names its private library by release (libsystemd-shared-252.so; some builds add the
# package's version: libsystemd-shared-252.39-1.so), beside its programs in LIBDIR/systemd.
_SYSTEMD_SHARED = re.compile(r"^libsystemd-shared-([0-9]+)(?:[.-][^/]*)?\.so\Z")


def _find(root, name):
    for pattern in LIBRARY_DIRS:
        for directory in sorted(glob.glob(os.path.join(root, pattern))):
            path = os.path.join(directory, name)
            if os.path.exists(path):
                return path
    return None


def glibc_version(root):
    """'2.36', or None where the root has no glibc (musl, or a tree without libraries)."""
    path = _find(root, "libc.so.6")
    if path is None:
        return None
    with open(path, "rb") as handle:
        match = _GLIBC_BANNER.search(handle.read(_READ_LIMIT))
    return match.group(1).decode("ascii") if match else None


def glibcxx_version(root):
    """'3.4.30' (the newest GLIBCXX_ version libstdc++ defines), or None without libstdc++."""
    path = _find(root, "libstdc++.so.6")
    if path is None:
        return None
    match = _LIBSTDCXX_FILE.match(os.path.basename(os.path.realpath(path)))
    return "3.4.%s" % match.group(1) if match else None


def systemd_version(root):
    """252 (systemd's release), or None where the root has no systemd library to tell it."""
    found = []
    for pattern in LIBRARY_DIRS:
        for path in glob.glob(os.path.join(root, pattern, "systemd", "libsystemd-shared-*.so")):
            match = _SYSTEMD_SHARED.match(os.path.basename(path))
            if match:
                found.append(int(match.group(1)))
    return max(found) if found else None


def runtime(root):
    return {"glibc": glibc_version(root), "glibcxx": glibcxx_version(root), "systemd": systemd_version(root)}
