# -*- coding: utf-8 -*-
# Copyright: cpuinfer.llm contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Wheels for offline installs on hosts, on the controller: fetched once into a cache, zipped with the
collection's offline installer (agent/offline_install.py) into one bundle a host runs with its python3.
Used by the host_agent_wheel lookup (the host agent) and the pull_venv_bundle lookup (ansible-pull's venv)."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import hashlib
import os
import re
import subprocess
import sys
import tempfile
import zipfile

from ansible.errors import AnsibleLookupError

COLLECTION = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
BUNDLE_MAIN = os.path.join(COLLECTION, "agent", "offline_install.py")
# pypa's installer: hosts run it from its wheel to unpack the others into a venv made without pip
INSTALLER = ("installer", "0.7.0")
FIXED_DATE = (1980, 1, 1, 0, 0, 0)


def digest_of(files):
    digest = hashlib.sha256()
    for relative in sorted(files):
        with open(files[relative], "rb") as handle:
            content = handle.read()
        digest.update(b"%s\0%d\0" % (relative.encode("utf-8"), len(content)))
        digest.update(content)
    return digest.hexdigest()[:16]


def exact_pin(requirement, where):
    """(name, version) of a requirement pinned with ==; where names its source in the refusal of any other."""
    match = re.fullmatch(r"([A-Za-z0-9_.-]+)==([A-Za-z0-9_.+!-]+)", requirement.replace(" ", ""))
    if not match:
        raise AnsibleLookupError("%s %r is not pinned with ==: offline installs need exact wheels" % (where, requirement))
    return match.group(1), match.group(2)


def wheel_of(directory, name, version, ending="-none-any.whl"):
    """The wheel of name==version in directory whose name ends so (by default a pure-Python one), or None."""
    prefix = "%s-%s-" % (re.sub(r"[-_.]+", "_", name).lower(), version)
    found = sorted(f for f in os.listdir(directory) if f.lower().startswith(prefix) and f.endswith(ending))
    return os.path.join(directory, found[0]) if found else None


def dependency_wheels(directory, pins):
    """The wheels of pins [(name, version)] in directory, fetched with pip download where missing."""
    os.makedirs(directory, exist_ok=True)
    wheels = []
    for name, version in pins:
        wheel = wheel_of(directory, name, version)
        if wheel is None:
            result = subprocess.run(
                [sys.executable, "-m", "pip", "download", "--no-deps", "--only-binary=:all:", "--disable-pip-version-check",
                 "--dest", directory, "%s==%s" % (name, version)], capture_output=True, text=True, check=False)
            wheel = wheel_of(directory, name, version)
            if wheel is None:
                raise AnsibleLookupError("an offline install needs %s==%s as a pure-Python wheel in %s; pip download failed "
                                         "(exit %d): %s. Without an index, put the wheel file there by hand." % (
                                             name, version, directory, result.returncode, result.stderr[-1000:]))
        wheels.append(wheel)
    return wheels


def install_bundle(wheels, installer, directory, main=BUNDLE_MAIN):
    """The one file a host gets: a zip Python runs (`python3 BUNDLE VENV DIGEST`), main as __main__.py and
    the wheels, named by a digest of all of it; built once, atomically, the same bytes for the same inputs."""
    ordered = [installer] + wheels
    members = dict([("__main__.py", main)] + [("wheels/" + os.path.basename(w), w) for w in ordered])
    path = os.path.join(directory, "install-%s.pyz" % digest_of(members))
    if os.path.isfile(path):
        return path
    order = "".join(os.path.basename(w) + "\n" for w in ordered).encode("utf-8")
    handle, staging = tempfile.mkstemp(prefix=".bundle-", dir=directory)
    os.close(handle)
    with zipfile.ZipFile(staging, "w", zipfile.ZIP_STORED) as archive:
        for name, source in members.items():
            with open(source, "rb") as member:
                archive.writestr(zipfile.ZipInfo(name, date_time=FIXED_DATE), member.read())
        archive.writestr(zipfile.ZipInfo("wheels/ORDER", date_time=FIXED_DATE), order)
    os.chmod(staging, 0o644)
    os.rename(staging, path)
    return path
