# -*- coding: utf-8 -*-
# Copyright: cpuinfer.llm contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The names a host's engine build is keyed by: distribution and its release, the machine, and the
Python that runs modules. Read in the host_facts run: no setup run of its own.

The distribution comes from Ansible's sys_info (the vendored distro over /etc/os-release), which
AnsibleModule has loaded already. Ansible's facts package would give setup's names too, but importing
it loads every fact collector: about 3 s of each host_facts run on a slow host, for two strings that are
the same on the distributions engines are built for (Debian, Ubuntu)."""

from __future__ import absolute_import, division, print_function

import platform
import sys

from ansible.module_utils.common.sys_info import get_distribution, get_distribution_codename

__metaclass__ = type


def os_identity():
    """{'distribution': 'Debian', 'release': 'bookworm', 'architecture': 'x86_64', 'python': '3.11'} of the
    live host. setup's architecture is platform.machine() on Linux except 32-bit x86, which has no build class."""
    return {
        "distribution": get_distribution(),
        "release": get_distribution_codename(),
        "architecture": platform.machine(),
        "python": "%d.%d" % sys.version_info[:2],
    }
