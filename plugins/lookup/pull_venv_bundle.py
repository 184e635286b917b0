# -*- coding: utf-8 -*-
# Copyright: cpuinfer.llm contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import absolute_import, division, print_function

__metaclass__ = type

DOCUMENTATION = r"""
name: pull_venv_bundle
author: cpuinfer.llm maintainers (@cpuinfer)
short_description: ansible-pull's venv for a pull-mode host, as one offline install bundle built on the controller
description:
  - Fetches the wheels pinned in the collection's C(requirements/pull.txt) (ansible-core and what it needs, and what
    the roles run on a controller, which a pull-mode host is to itself) for the host's machine and Python with
    C(pip download --platform), once per machine and Python into the cache, and zips them with the collection's
    offline installer into one bundle, which C(python3 BUNDLE VENV DIGEST) installs (as the host agent's).
  - Compiled wheels are taken for glibc 2.28 at most (manylinux_2_17 to manylinux_2_28); every release with a Python
    ansible-core's controller accepts has a newer glibc.
  - The controller's pip configuration names the index; a controller without one can put the wheel files into
    C(<cache>/wheels-MACHINE-cpXY) by hand.
options:
  cache:
    description: Directory on the controller that keeps the wheels and bundles.
    type: path
    required: true
  machine:
    description: The host's machine, as C(platform.machine()) names it.
    type: str
    required: true
    choices: [x86_64, aarch64]
  python:
    description: The host's Python, C(X.Y).
    type: str
    required: true
"""

EXAMPLES = r"""
- name: ansible-pull's venv for this host
  ansible.builtin.set_fact:
    pull_venv: >-
      {{ lookup('cpuinfer.llm.pull_venv_bundle', cache='~/.cache/cpuinfer-llm/pull',
                machine=ansible_facts.cpuinfer.os.architecture, python=ansible_facts.cpuinfer.os.python) }}
"""

RETURN = r"""
_raw:
  description: One dict per call.
  type: list
  elements: dict
  contains:
    bundle:
      description: The bundle on the controller (C(install-DIGEST.pyz)).
      type: path
    digest:
      description: First 16 hex digits of the sha256 over the bundle's members; names the venv on the host.
      type: str
    wheels:
      description: The wheel files the bundle installs, by name.
      type: list
      elements: str
"""

import os
import re
import subprocess
import sys
import tempfile

from ansible.errors import AnsibleLookupError
from ansible.plugins.lookup import LookupBase
from ansible_collections.cpuinfer.llm.plugins.plugin_utils.wheels import COLLECTION, INSTALLER, dependency_wheels, exact_pin, install_bundle, wheel_of

REQUIREMENTS = os.path.join(COLLECTION, "requirements", "pull.txt")
MACHINES = ("x86_64", "aarch64")
GLIBC_MINORS = range(17, 29)


def pins(path=REQUIREMENTS):
    """[(name, version)] of the requirements file, each pinned with ==."""
    with open(path, encoding="utf-8") as handle:
        lines = [line.split("#", 1)[0].strip() for line in handle]
    return [exact_pin(line, path + ":") for line in lines if line]


def platform_argv(machine, python):
    """pip download's options for wheels a host of this machine and Python installs."""
    if machine not in MACHINES:
        raise AnsibleLookupError("pull mode has no wheels for machine %r; it supports %s" % (machine, ", ".join(MACHINES)))
    if not re.fullmatch(r"3\.[0-9]+", python or ""):
        raise AnsibleLookupError("give the host's Python as X.Y (3.11), not %r" % (python,))
    tag = "cp" + python.replace(".", "")
    argv = ["--only-binary=:all:", "--python-version", python, "--implementation", "cp",
            "--abi", tag, "--abi", "abi3", "--abi", "none", "--platform", "manylinux2014_" + machine]
    for minor in GLIBC_MINORS:
        argv += ["--platform", "manylinux_2_%d_%s" % (minor, machine)]
    return argv


def platform_wheels(directory, wanted, machine, python):
    """The wheels of wanted [(name, version)] for the host in directory, fetched in one pip download where missing."""
    os.makedirs(directory, exist_ok=True)
    missing = [(name, version) for name, version in wanted if wheel_of(directory, name, version, ".whl") is None]
    if missing:
        with tempfile.NamedTemporaryFile("w", suffix=".txt", dir=directory, delete=False) as listing:
            listing.write("".join("%s==%s\n" % pin for pin in missing))
        try:
            result = subprocess.run([sys.executable, "-m", "pip", "download", "--no-deps", "--disable-pip-version-check",
                                     "--dest", directory, "-r", listing.name] + platform_argv(machine, python),
                                    capture_output=True, text=True, check=False)
        finally:
            os.unlink(listing.name)
        still = ["%s==%s" % pin for pin in missing if wheel_of(directory, *pin, ending=".whl") is None]
        if still:
            raise AnsibleLookupError("ansible-pull's venv for %s, Python %s needs wheels of %s in %s; pip download failed "
                                     "(exit %d): %s. Without an index, put the wheel files there by hand." % (
                                         machine, python, ", ".join(still), directory, result.returncode,
                                         result.stderr[-1000:]))
    return [wheel_of(directory, name, version, ".whl") for name, version in wanted]


def pull_venv(cache, machine, python, requirements=REQUIREMENTS):
    platform_argv(machine, python)  # refuses a machine or Python it has no wheels for, before any download
    directory = os.path.join(cache, "wheels-%s-cp%s" % (machine, python.replace(".", "")))
    wheels = platform_wheels(directory, pins(requirements), machine, python)
    installer = dependency_wheels(os.path.join(cache, "installer"), [INSTALLER])[0]
    bundle = install_bundle(wheels, installer, directory)
    digest = re.fullmatch(r"install-([0-9a-f]+)\.pyz", os.path.basename(bundle)).group(1)
    return {"bundle": bundle, "digest": digest, "wheels": [os.path.basename(wheel) for wheel in wheels]}


class LookupModule(LookupBase):

    def run(self, terms, variables=None, **kwargs):
        self.set_options(var_options=variables, direct=kwargs)
        return [pull_venv(os.path.expanduser(self.get_option("cache")), self.get_option("machine"), self.get_option("python"))]
