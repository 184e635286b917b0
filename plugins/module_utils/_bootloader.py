# -*- coding: utf-8 -*-
# Copyright: cpuinfer.llm contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The kernel command line: what the running kernel booted with (/proc/cmdline), which boot loader
tool a host's OS family writes it through, and the plans for each.

- Debian family (Debian, Ubuntu, Kylin/UOS desktop): a drop-in /etc/default/grub.d/91-cpuinfer-NAME.cfg
  that appends to GRUB_CMDLINE_LINUX_DEFAULT, then update-grub. The drop-in is the record of what we
  set: removing it and running update-grub again takes exactly our arguments away.
- RPM family (openEuler, Kylin/UOS server, RHEL and its rebuilds): grubby, which edits every boot entry
  (--update-kernel=ALL); what each entry has now is read back from grubby --info=ALL.

Every path is taken under a root, so unit tests run on fake trees of each family."""

from __future__ import absolute_import, division, print_function

import os
import re
import shlex

from ansible_collections.cpuinfer.llm.plugins.module_utils._errors import HostError
from ansible_collections.cpuinfer.llm.plugins.module_utils._knobs import knob_path
from ansible_collections.cpuinfer.llm.plugins.module_utils._persist import read_file

__metaclass__ = type

DEBIAN, RPM = "debian", "rpm"
TOOLS = {DEBIAN: "/usr/sbin/update-grub", RPM: "/usr/sbin/grubby"}
_DEBIAN_WORDS = {"debian", "ubuntu"}
_RPM_WORDS = {"rhel", "fedora", "centos", "openeuler", "euleros", "rocky", "almalinux", "anolis", "suse"}
_NAME = re.compile(r"^[a-z0-9][a-z0-9-]*$")
_ARG_KEY = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.-]*$")
# a value lands inside a double-quoted shell assignment (grub.d) and in grubby's argument: no
# whitespace, quotes, $, backquote or backslash, which either would read differently
_ARG_VALUE = re.compile(r"^[!#%&()*+,./0-9:;<=>?@A-Z\[\]^_a-z{|}~-]+$")
# every argument host_tuning's isolation may set (taken away again when it is off)
ISOLATION_ARGS = ("nohz_full", "rcu_nocbs", "irqaffinity", "isolcpus")
_DROPIN_LINE = re.compile(r'^GRUB_CMDLINE_LINUX_DEFAULT="\$GRUB_CMDLINE_LINUX_DEFAULT ?(.*)"$')


class BootLoaderError(HostError):
    """The host's boot loader cannot be read or written as planned."""


def _os_release(root):
    for relative in ("/etc/os-release", "/usr/lib/os-release"):
        text = read_file(root, relative)
        if text is None:
            continue
        fields = {}
        for line in text.splitlines():
            key, sep, value = line.partition("=")
            if sep:
                fields[key.strip()] = value.strip().strip("\"'")
        return fields
    return {}


def os_family(root):
    """'debian', 'rpm' or None. ID and ID_LIKE decide; Kylin and UOS ship both kinds under one ID
    (desktop on Debian, server on RPM), so there the package manager present decides."""
    fields = _os_release(root)
    words = set((fields.get("ID", "") + " " + fields.get("ID_LIKE", "")).lower().split())
    if words & _DEBIAN_WORDS:
        return DEBIAN
    if words & _RPM_WORDS:
        return RPM
    if os.path.exists(knob_path(root, "/usr/bin/dpkg")):
        return DEBIAN
    if os.path.exists(knob_path(root, "/usr/bin/rpm")):
        return RPM
    return None


def boot_loader_tool(root, family):
    """The tool that writes the boot loader's configuration for family, or BootLoaderError saying
    what is missing (a host booted without a boot loader of its own, a container, an unknown OS)."""
    if family is None:
        raise BootLoaderError("cannot tell this host's OS family from /etc/os-release (neither Debian-like nor "
                              "RPM-based): the kernel command line is written through update-grub or grubby")
    tool = TOOLS[family]
    if not os.path.exists(knob_path(root, tool)):
        raise BootLoaderError("%s-family host without %s (package %s): its boot loader cannot be told the kernel "
                              "command line" % (family, tool, "grub2-common" if family == DEBIAN else "grubby"))
    return tool


def validate_name(name):
    if not _NAME.match(name or ""):
        return ["name %r: lowercase letters, digits and '-' only (it names a file)" % (name,)]
    return []


def validate_args(args):
    """Problems of {key: value or None (a flag)}, all at once."""
    problems = []
    for key in sorted(args):
        value = args[key]
        if not _ARG_KEY.match(key):
            problems.append("argument name %r: letters, digits, '_', '.' and '-' only" % (key,))
        elif value is not None and not _ARG_VALUE.match(str(value)):
            problems.append("%s=%r: the value must be printable ASCII without spaces, quotes, '$', '`' or '\\'"
                            % (key, value))
    return problems


def render_args(args):
    """{key: value or None} -> 'key=value flag', sorted by key (a stable text to compare and show)."""
    return " ".join(key if args[key] is None else "%s=%s" % (key, args[key]) for key in sorted(args))


def parse_args(text):
    """'a=1 b "c=x y"' -> [('a', '1'), ('b', None), ('c', 'x y')], in order (repeats kept)."""
    try:
        tokens = shlex.split(text or "")
    except ValueError as exc:
        raise BootLoaderError("cannot read the kernel command line %r: %s" % (text, exc))
    parsed = []
    for token in tokens:
        key, sep, value = token.partition("=")
        parsed.append((key, value if sep else None))
    return parsed


def running_args(root):
    """{key: value or None} the running kernel booted with; for a repeated key the last one, which is
    the one the kernel's parameter handlers keep."""
    try:
        with open(knob_path(root, "/proc/cmdline"), "rb") as handle:
            return dict(parse_args(handle.read().decode("utf-8", "replace")))
    except (IOError, OSError) as exc:
        raise BootLoaderError("cannot read /proc/cmdline: %s" % (os.strerror(exc.errno) if exc.errno else exc))


def reboot_required(running, wanted, removed_keys):
    """Whether the running kernel lacks a wanted argument or still has one being removed."""
    return (any(key not in running or running[key] != value for key, value in wanted.items())
            or any(key in running for key in removed_keys if key not in wanted))


# Debian family

def dropin_relative(name):
    return "/etc/default/grub.d/91-cpuinfer-%s.cfg" % name


def render_dropin(args, header):
    if not args:
        return None
    return header + 'GRUB_CMDLINE_LINUX_DEFAULT="$GRUB_CMDLINE_LINUX_DEFAULT %s"\n' % render_args(args)


def parse_dropin(text):
    """The arguments our drop-in appends ({} without one; a line not of ours adds nothing)."""
    found = {}
    for line in (text or "").splitlines():
        match = _DROPIN_LINE.match(line.strip())
        if match:
            found.update(parse_args(match.group(1)))
    return found


# RPM family (grubby)

def parse_grubby_info(text):
    """grubby --info=ALL -> [{'kernel': path, 'args': {key: value}}], one per boot entry."""
    entries, current = [], None
    for line in (text or "").splitlines():
        key, sep, value = line.partition("=")
        if not sep:
            continue
        value = value.strip()
        if len(value) >= 2 and value[0] == value[-1] and value[0] in "\"'":
            value = value[1:-1]
        if key == "kernel":
            current = {"kernel": value, "args": {}}
            entries.append(current)
        elif key == "args" and current is not None:
            current["args"] = dict(parse_args(value))
    return entries


def grubby_common_args(entries, keys):
    """{key: value} of the keys every entry has with one value: what 'the host boots with' means
    across entries (a key that differs between entries is left out, so a converge sets it)."""
    common = {}
    for key in keys:
        if entries and all(key in entry["args"] for entry in entries):
            values = set(entry["args"][key] for entry in entries)
            if len(values) == 1:
                common[key] = values.pop()
    return common


def grubby_plan(entries, wanted, removed_keys):
    """[(kernel, tokens to add, keys to remove, previous tokens of those keys)] for entries that differ.
    The previous tokens are the undo: remove what was touched, add back what the entry had."""
    plan = []
    for entry in entries:
        args = entry["args"]
        add = dict((k, v) for k, v in wanted.items() if k not in args or args[k] != v)
        remove = [k for k in sorted(removed_keys) if k in args and k not in wanted]
        if add or remove:
            touched = set(add) | set(remove)
            previous = dict((k, args[k]) for k in touched if k in args)
            plan.append((entry["kernel"], add, remove, previous))
    return plan


def grubby_argv(tool, kernel, add, remove):
    argv = [tool, "--update-kernel=" + kernel]
    if add:
        argv.append("--args=" + render_args(add))
    if remove:
        argv.append("--remove-args=" + " ".join(sorted(remove)))
    return argv
