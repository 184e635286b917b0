# -*- coding: utf-8 -*-
# Copyright: cpuinfer.llm contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Whether a record file on the host, as host_facts reported it (records), already holds what a play
would write: then the play skips the write and its module run.

The code of the records filters (plugins/filter/records.py names them)."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import hashlib

from ansible.errors import AnsibleFilterError
from ansible.module_utils.six.moves.collections_abc import Mapping


def record_is(found, sha256, mode, uid=0, gid=0):
    """Whether a reported file ({sha256, mode, uid, gid}, or None when absent) has that sha256, mode (octal
    text) and owner ids."""
    return (found is not None and found.get("sha256") == sha256
            and int(str(found.get("mode")), 8) == int(str(mode), 8) and found.get("uid") == uid and found.get("gid") == gid)


def record_current(records, path, content, mode="0644", uid=0, gid=0):
    """True when records[path] has content's sha256, the mode (octal text) and the owner ids; False when
    the record differs, is absent or was not reported."""
    if not isinstance(records, Mapping):
        raise AnsibleFilterError("record_current: give host_facts' cpuinfer_records (a dict), not %r" % (records,))
    return record_is(records.get(path), hashlib.sha256(content.encode("utf-8")).hexdigest(), mode, uid, gid)
