# -*- coding: utf-8 -*-
# Copyright: cpuinfer.llm contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import absolute_import, division, print_function

__metaclass__ = type


class ModuleDocFragment:
    """Options and attributes shared by the modules that drive kernel interfaces."""

    DOCUMENTATION = r"""
options:
  root:
    description:
      - Directory that stands for C(/) when reading and writing kernel and configuration files.
      - Used to run against an offline snapshot or a test tree; leave it at C(/) on real hosts.
    type: path
    default: /
attributes:
  check_mode:
    support: full
    description: Reports what would change and writes nothing.
  diff_mode:
    support: full
    description: Shows the values before and after, runtime and persisted.
  platform:
    support: full
    platforms: posix
    description: Linux hosts; the kernel interfaces used are Linux-only.
"""

    PERSISTENT = r"""
options:
  persistent:
    description:
      - Also record the values in a drop-in file so they are applied again at every boot.
      - When V(false), only the running kernel is changed and an existing drop-in is left as it is.
    type: bool
    default: true
"""
