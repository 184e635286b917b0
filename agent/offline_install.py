# -*- coding: utf-8 -*-
# Copyright: cpuinfer.llm contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The host agent's offline install, as a host runs it: `python3 BUNDLE.pyz VENV DIGEST`.

The host_agent_wheel lookup zips this file (as __main__.py) with the agent's wheel, its dependencies'
and pypa's installer into one bundle, and the host_agent role runs it with ansible.builtin.script: one
transfer and one program per host where shipping, venv, installs, marker and clean-up were seven module
runs (each costs seconds on an emulated or distant host). Standard library only: the host has nothing else
yet. The marker is written last, so an interrupted install leaves none and the next converge redoes it."""

from __future__ import absolute_import, division, print_function

import os
import shutil
import subprocess
import sys
import tempfile
import zipfile

__metaclass__ = type

MARKER = ".cpuinfer-installed"
WHEELS = "wheels/"
INSTALLER_PREFIX = "installer-"
CURRENT = "current"
VENV_ENTRIES = ("bin", "include", "lib", "lib64", "pyvenv.cfg", MARKER)


def bundled_wheels(bundle):
    """(installer wheel name, [other wheel names in install order]) as the bundle lists them."""
    with zipfile.ZipFile(bundle) as archive:
        with archive.open(WHEELS + "ORDER") as order:
            names = order.read().decode("utf-8").split()
    installer = [name for name in names if name.startswith(INSTALLER_PREFIX)]
    if len(installer) != 1:
        raise ValueError("the bundle must carry exactly one installer wheel, it lists %s" % names)
    return installer[0], [name for name in names if name != installer[0]]


def clear_leftovers(venv):
    """What an interrupted install left in the venv directory (never anything outside it)."""
    for entry in VENV_ENTRIES:
        path = os.path.join(venv, entry)
        if os.path.isdir(path) and not os.path.islink(path):
            shutil.rmtree(path)
        elif os.path.lexists(path):
            os.unlink(path)


def install(bundle, venv, digest, python=sys.executable):
    """Unpack the wheels, make a venv without pip, install them with installer, then write the marker."""
    installer, wheels = bundled_wheels(bundle)
    os.makedirs(venv, mode=0o755, exist_ok=True)
    clear_leftovers(venv)
    subprocess.run([python, "-m", "venv", "--without-pip", venv], check=True)
    with tempfile.TemporaryDirectory(prefix=".wheels-", dir=venv) as scratch:
        with zipfile.ZipFile(bundle) as archive:
            for name in [installer] + wheels:
                archive.extract(WHEELS + name, scratch)
        env = dict(os.environ, PYTHONPATH=os.path.join(scratch, WHEELS, installer))
        for name in wheels:
            subprocess.run([os.path.join(venv, "bin", "python"), "-m", "installer", os.path.join(scratch, WHEELS, name)],
                           check=True, env=env)
    marker = os.path.join(venv, MARKER)
    with open(marker + ".tmp", "w", encoding="utf-8") as handle:
        handle.write(digest + "\n")
    os.rename(marker + ".tmp", marker)


def prune_earlier(venv):
    """Remove the other installs beside venv but the newest of them (a daemon not restarted yet still
    runs from it); the names of those removed."""
    parent, own = os.path.split(os.path.normpath(venv))
    others = [os.path.join(parent, name) for name in os.listdir(parent)
              if name != own and os.path.isdir(os.path.join(parent, name)) and not os.path.islink(os.path.join(parent, name))]
    others.sort(key=os.path.getmtime)
    for path in others[:-1]:
        shutil.rmtree(path)
    return [os.path.basename(path) for path in others[:-1]]


def point_current(venv):
    """parent/current -> the venv just installed, replaced atomically: units that must not restart
    when the agent changes (an inference instance's ExecStop) name this path, not the digest."""
    parent, own = os.path.split(os.path.normpath(venv))
    link = os.path.join(parent, CURRENT)
    if os.path.lexists(link + ".tmp"):  # left by an interrupted run
        os.unlink(link + ".tmp")
    os.symlink(own, link + ".tmp")
    os.rename(link + ".tmp", link)
    return link


def main(argv=None):
    argv = sys.argv if argv is None else argv
    if len(argv) != 3 or not os.path.isabs(argv[1]):
        sys.stderr.write("usage: python3 BUNDLE ABSOLUTE_VENV_PATH DIGEST\n")
        return 2
    bundle = os.path.dirname(os.path.abspath(__file__))  # run as a zip: __file__ is BUNDLE/__main__.py
    install(bundle, argv[1], argv[2])
    point_current(argv[1])
    removed = prune_earlier(argv[1])
    sys.stdout.write("installed %s in %s; earlier installs removed: %s\n" % (argv[2], argv[1], ", ".join(removed) or "none"))
    return 0


if __name__ == "__main__":
    sys.exit(main())
