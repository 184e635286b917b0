# -*- coding: utf-8 -*-
# Copyright: cpuinfer.llm contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import absolute_import, division, print_function

__metaclass__ = type

DOCUMENTATION = r"""
name: host_agent_wheel
author: cpuinfer.llm maintainers (@cpuinfer)
short_description: The host agent's wheel, built on the controller from this collection's own sources
description:
  - Stages the host agent package (C(agent/) in the collection) with the kernel-interface helpers of
    C(plugins/module_utils) that it imports, found by following its imports (not a list kept by hand),
    under their collection path, and builds one pure-Python wheel with C(pip wheel), offline.
  - The build is named by a digest of what was staged, so an unchanged collection finds its wheel in the
    cache and any change to the agent or to a helper it imports builds a new one. Concurrent callers may
    both build; the first finished wheel wins, atomically.
  - The agent's dependencies, pinned exactly in C(agent/pyproject.toml), are fetched as wheels into
    C(<cache>/deps) with C(pip download) the first time (the controller's pip configuration names the index);
    a controller without an index can put those wheel files there by hand.
  - Needs C(setuptools) and C(wheel) in the controller's Python (the collection's controller requirements
    pin both).
options:
  cache:
    description: Directory on the controller that keeps built wheels, one subdirectory per digest.
    type: path
    required: true
"""

EXAMPLES = r"""
- name: The agent's wheel for this collection
  ansible.builtin.set_fact:
    agent_wheel: "{{ lookup('cpuinfer.llm.host_agent_wheel', cache='~/.cache/cpuinfer-llm/agent') }}"
"""

RETURN = r"""
_raw:
  description: One dict per call.
  type: list
  elements: dict
  contains:
    path:
      description: The wheel on the controller.
      type: path
    filename:
      description: The wheel's file name.
      type: str
    digest:
      description: First 16 hex digits of the sha256 over the staged sources; names the install on hosts.
      type: str
    helpers:
      description: The module_utils helpers the wheel carries, by file name.
      type: list
      elements: str
    dependencies:
      description: The wheels of the agent's dependencies on the controller, to install beside it.
      type: list
      elements: path
    installer:
      description:
        - The wheel of pypa's C(installer) on the controller. Hosts run it from the wheel itself to put the
          agent's wheels into a venv made without pip (pip and its resolver cost minutes on an emulated or
          small host; installer unpacks a wheel in well under a second).
      type: path
    bundle:
      description:
        - One file with everything a host needs, a zip that C(python3 BUNDLE VENV DIGEST) runs (the collection's
          C(agent/offline_install.py) as its C(__main__.py)), carrying the agent's wheel, its dependencies' and
          installer's. It makes the venv without pip, installs the wheels, writes the marker last and removes
          all but the newest earlier install, in one program run.
      type: path
"""

import ast
import os
import shutil
import subprocess
import sys
import tempfile
import tomllib

from ansible.errors import AnsibleLookupError
from ansible.plugins.lookup import LookupBase
from ansible_collections.cpuinfer.llm.plugins.plugin_utils.wheels import INSTALLER, dependency_wheels, digest_of, exact_pin, install_bundle

COLLECTION = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
AGENT = os.path.join(COLLECTION, "agent")
HELPERS = os.path.join(COLLECTION, "plugins", "module_utils")
HELPER_PACKAGE = "ansible_collections.cpuinfer.llm.plugins.module_utils"
HELPER_TARGET = os.path.join("ansible_collections", "cpuinfer", "llm", "plugins", "module_utils")


def imported_helpers(path):
    """Names of the collection helpers a Python file imports ('_cpulist', ...)."""
    with open(path, "rb") as handle:
        tree = ast.parse(handle.read(), path)
    names = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and node.module == HELPER_PACKAGE:
            names.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and (node.module or "").startswith(HELPER_PACKAGE + "."):
            names.add(node.module.rsplit(".", 1)[1])
    return names


def agent_sources(agent=AGENT):
    """Relative paths of the agent's own files: pyproject.toml and the package's .py files."""
    found = ["pyproject.toml"]
    for directory, subdirectories, files in os.walk(os.path.join(agent, "cpuinfer_agent")):
        subdirectories[:] = sorted(d for d in subdirectories if d != "__pycache__")
        found.extend(os.path.relpath(os.path.join(directory, name), agent) for name in sorted(files) if name.endswith(".py"))
    return found


def helper_closure(python_files, helpers=HELPERS):
    """Every helper the files import, and every helper those import, as sorted file names."""
    wanted, seen = set(), set()
    for path in python_files:
        wanted |= imported_helpers(path)
    while wanted - seen:
        name = sorted(wanted - seen)[0]
        seen.add(name)
        path = os.path.join(helpers, name + ".py")
        if not os.path.isfile(path):
            raise AnsibleLookupError("the agent imports %s.%s, which the collection does not have" % (HELPER_PACKAGE, name))
        wanted |= imported_helpers(path)
    return sorted(name + ".py" for name in seen)


def staged_files(agent=AGENT, helpers=HELPERS):
    """{path in the build tree: source path}, for everything the wheel is built from."""
    own = agent_sources(agent)
    files = dict((relative, os.path.join(agent, relative)) for relative in own)
    closure = helper_closure([files[r] for r in own if r.endswith(".py")], helpers)
    files.update((os.path.join(HELPER_TARGET, name), os.path.join(helpers, name)) for name in closure)
    return files, closure


def build(files, destination):
    """pip wheel on a staged copy; -> the wheel's path inside destination."""
    with tempfile.TemporaryDirectory(prefix="cpuinfer-agent-") as scratch:
        tree = os.path.join(scratch, "src")
        for relative, source in files.items():
            os.makedirs(os.path.dirname(os.path.join(tree, relative)), exist_ok=True)
            shutil.copyfile(source, os.path.join(tree, relative))
        out = os.path.join(scratch, "out")
        # a fixed date makes the archive the same bytes for the same sources
        env = dict(os.environ, SOURCE_DATE_EPOCH="315532800", PIP_DISABLE_PIP_VERSION_CHECK="1")
        result = subprocess.run(
            [sys.executable, "-m", "pip", "wheel", "--no-deps", "--no-build-isolation", "--no-index",
             "--wheel-dir", out, tree],
            capture_output=True, text=True, env=env, check=False, cwd=scratch)
        wheels = os.listdir(out) if os.path.isdir(out) else []
        if result.returncode != 0 or len(wheels) != 1:
            raise AnsibleLookupError("building the host agent wheel failed (%s -m pip wheel, exit %d):\n%s%s" % (
                sys.executable, result.returncode, result.stdout[-2000:], result.stderr[-2000:]))
        staging = tempfile.mkdtemp(prefix=".building-", dir=os.path.dirname(destination))
        shutil.move(os.path.join(out, wheels[0]), os.path.join(staging, wheels[0]))
    try:
        os.rename(staging, destination)
    except OSError:
        shutil.rmtree(staging)  # another caller finished first: same sources, same wheel
        if not os.path.isdir(destination):
            raise
    return os.path.join(destination, wheels[0])


def pinned_dependencies(agent=AGENT):
    """[(name, version)] of the agent's [project] dependencies, each pinned with ==."""
    with open(os.path.join(agent, "pyproject.toml"), "rb") as handle:
        requirements = tomllib.load(handle)["project"].get("dependencies", [])
    return [exact_pin(requirement, "agent dependency") for requirement in requirements]


def agent_wheel(cache, agent=AGENT, helpers=HELPERS, deps=None):
    """deps: where dependency wheels are kept, <cache>/deps by default."""
    files, closure = staged_files(agent, helpers)
    digest = digest_of(files)
    destination = os.path.join(cache, digest)
    os.makedirs(cache, exist_ok=True)
    found = sorted(name for name in os.listdir(destination) if name.endswith(".whl")) if os.path.isdir(destination) else []
    path = os.path.join(destination, found[0]) if found else build(files, destination)
    # one pass over the cache for the dependencies and installer, the last of them
    wheels = dependency_wheels(deps or os.path.join(cache, "deps"), pinned_dependencies(agent) + [INSTALLER])
    return {"path": path, "filename": os.path.basename(path), "digest": digest, "helpers": closure,
            "dependencies": wheels[:-1], "installer": wheels[-1],
            "bundle": install_bundle(wheels[:-1] + [path], wheels[-1], destination)}


class LookupModule(LookupBase):

    def run(self, terms, variables=None, **kwargs):
        self.set_options(var_options=variables, direct=kwargs)
        cache = os.path.expanduser(self.get_option("cache"))
        return [agent_wheel(cache)]
