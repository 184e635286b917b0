# -*- coding: utf-8 -*-
# Copyright: cpuinfer.llm contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The names a host's engine build is keyed by, as setup's min subset gives them: distribution and its
release (from Ansible's own distribution code, so the keys of builds cached before stay the same), the
machine, and the Python that runs modules. Read in the host_facts run: no setup run of its own."""

from __future__ import absolute_import, division, print_function

import platform
import sys

from ansible.module_utils.facts.system.distribution import DistributionFactCollector

__metaclass__ = type


def os_identity(module):
    """{'distribution': 'Debian', 'release': 'bookworm', 'architecture': 'x86_64', 'python': '3.11'} of the
    live host. setup's architecture is platform.machine() on Linux except 32-bit x86, which has no build class."""
    distribution = DistributionFactCollector().collect(module=module)
    return {
        "distribution": distribution.get("distribution"),
        "release": distribution.get("distribution_release"),
        "architecture": platform.machine(),
        "python": "%d.%d" % sys.version_info[:2],
    }
