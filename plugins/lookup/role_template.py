# -*- coding: utf-8 -*-
# Copyright: cpuinfer.llm contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import absolute_import, division, print_function

__metaclass__ = type

DOCUMENTATION = r"""
name: role_template
author: cpuinfer.llm maintainers (@cpuinfer)
short_description: A role's template rendered with the task's variables, without copying them
description:
  - Renders each template file, found as C(ansible.builtin.template) finds it (the role's C(templates/) first),
    with the task's variables plus C(ansible_managed), C(template_path), C(template_fullpath) and
    C(template_host), and returns the text, trailing newlines kept, backslashes as written.
  - The same text as C(lookup('ansible.builtin.template', ...)) for the templates of this collection's roles,
    for a fraction of the controller's CPU. ansible-core's lookup deep-copies every variable of the task
    (hostvars and facts included) before each file, in the worker process of every host and task, and the
    collection's roles render their units on the controller once per host and converge; this lookup lays
    the template's own variables over the task's instead.
  - No C(template_vars), no other delimiters (the roles' templates use neither).
options:
  _terms:
    description: Template files, by name (searched as the builtin template lookup searches them).
    required: true
"""

EXAMPLES = r"""
- name: A unit rendered on the controller, written with the role's other files in one module run
  ansible.builtin.set_fact:
    unit_text: "{{ lookup('cpuinfer.llm.role_template', 'llama-server.service.j2') }}"
"""

RETURN = r"""
_raw:
  description: One rendered text per template file.
  type: list
  elements: str
"""

import os
import pwd
import time
from collections import ChainMap

from ansible import constants
from ansible.errors import AnsibleLookupError
from ansible.plugins.lookup import LookupBase
from ansible.template import trust_as_template


def _owner(stat):
    try:
        return pwd.getpwuid(stat.st_uid).pw_name
    except KeyError:
        return stat.st_uid


def ansible_managed(path, fullpath):
    """The configured ansible_managed text (DEFAULT_MANAGED_STR), as ansible-core's template lookup fills it in:
    {host}, {uid} and {file} replaced, strftime codes expanded at the file's modification time."""
    stat = os.stat(fullpath)
    text = constants.config.get_config_value("DEFAULT_MANAGED_STR")
    text = text.format(host=os.uname()[1], uid=_owner(stat), file=path)
    return time.strftime(text, time.localtime(stat.st_mtime))


def search_path(found, variables):
    """Where a template's own includes are looked up: its directory, then each search path's templates/ and itself."""
    paths = [os.path.dirname(found)]
    for path in variables.get("ansible_search_path", []):
        paths += [os.path.join(path, "templates"), path]
    return paths


class LookupModule(LookupBase):

    def run(self, terms, variables=None, **kwargs):
        variables = variables or {}
        self.set_options(var_options=variables, direct=kwargs)
        rendered = []
        for term in terms:
            found = self.find_file_in_search_path(variables, "templates", term)
            if not found:
                raise AnsibleLookupError("the template file %s could not be found for the lookup" % term)
            own = {"template_path": term, "template_fullpath": found, "template_host": os.uname()[1]}
            if "ansible_managed" not in variables:
                own["ansible_managed"] = ansible_managed(term, found)
            templar = self._templar.copy_with_new_env(available_variables=ChainMap(own, variables),
                                                      searchpath=search_path(found, variables))
            text = trust_as_template(self._loader.get_text_file_contents(found))
            rendered.append(templar.template(text, escape_backslashes=False))
        return rendered
