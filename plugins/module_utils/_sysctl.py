# -*- coding: utf-8 -*-
# Copyright: cpuinfer.llm contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""sysctl knobs through procfs (/proc/sys) and their sysctl.d drop-ins."""

from __future__ import absolute_import, division, print_function

import gzip
import os
import re

from ansible_collections.cpuinfer.llm.plugins.module_utils._decimal import is_signed_decimal
from ansible_collections.cpuinfer.llm.plugins.module_utils._errors import HostError
from ansible_collections.cpuinfer.llm.plugins.module_utils._knobs import knob_exists, knob_path, read_knob, write_knob
from ansible_collections.cpuinfer.llm.plugins.module_utils._persist import read_file

__metaclass__ = type

_KEY = re.compile(r"[a-z0-9_]+(\.[a-z0-9_]+)+")
_CONFIG_SET = re.compile(r"^(CONFIG_[A-Z0-9_]+)=(.*)$", re.MULTILINE)
_CONFIG_UNSET = re.compile(r"^# (CONFIG_[A-Z0-9_]+) is not set$", re.MULTILINE)


class SysctlError(HostError):
    """An unknown sysctl key, or a value the kernel does not hold."""


def sysctl_path(key):
    if not isinstance(key, str) or not _KEY.fullmatch(key):
        raise SysctlError("not a sysctl key: %r" % key)
    return "/proc/sys/" + key.replace(".", "/")


def sysctl_key(path):
    """'/proc/sys/kernel/numa_balancing' -> 'kernel.numa_balancing' (the inverse of sysctl_path)."""
    prefix = "/proc/sys/"
    key = path[len(prefix):].replace("/", ".") if path.startswith(prefix) else ""
    if not _KEY.fullmatch(key):
        raise SysctlError("not a sysctl path: %r" % path)
    return key


def read_int(root, key):
    path = sysctl_path(key)
    if not knob_exists(root, path):
        raise SysctlError("this kernel has no %s (%s)" % (key, path))
    text = read_knob(root, path)
    if not is_signed_decimal(text):
        raise SysctlError("%s holds %r, not an integer" % (path, text))
    return int(text)


def write_value(root, key, value):
    write_knob(root, sysctl_path(key), value)


def parse_dropin(text):
    """'key = value' lines of a sysctl.d file -> dict; comments and blanks skipped."""
    values = {}
    for line in (text or "").splitlines():
        line = line.strip()
        if line and not line.startswith(("#", ";")) and "=" in line:
            key, value = line.split("=", 1)
            values[key.strip().lstrip("-")] = value.strip()
    return values


def render_dropin(header, values, notes=()):
    lines = [header] + ["# %s\n" % note for note in notes]
    lines += ["%s = %s\n" % (key, values[key]) for key in sorted(values)]
    return "".join(lines)


def kernel_release(root):
    """The running kernel's release ('6.1.0-28-amd64'), or None where procfs does not tell it."""
    return read_knob(root, "/proc/sys/kernel/osrelease") if knob_exists(root, "/proc/sys/kernel/osrelease") else None


def kernel_config(root):
    """The running kernel's build options {'CONFIG_X': 'y', 'CONFIG_Y': 'n' (is not set)}, or None
    when no config is readable (/proc/config.gz, else /boot/config-<release>)."""
    text = None
    config_gz = knob_path(root, "/proc/config.gz")
    if os.path.exists(config_gz):
        try:
            with gzip.open(config_gz, "rt") as handle:
                text = handle.read()
        except (IOError, OSError):
            text = None
    release = kernel_release(root) if text is None else None
    if release is not None:
        text = read_file(root, "/boot/config-%s" % release)
    if text is None:
        return None
    options = dict(_CONFIG_SET.findall(text))
    options.update((name, "n") for name in _CONFIG_UNSET.findall(text))
    return options
