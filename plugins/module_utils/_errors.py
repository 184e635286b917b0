# -*- coding: utf-8 -*-
# Copyright: cpuinfer.llm contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The one base of every error the collection's helpers raise on purpose.

A HostError is an answer for the operator (a refused request, a kernel that said no, a file that
cannot be read); its message is the whole story. Any other exception inside a module is a defect,
reported with its traceback (see _runner)."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type


class HostError(Exception):
    """A request or a host state the collection refuses, or a kernel refusal, said in words."""
