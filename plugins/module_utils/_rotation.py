# -*- coding: utf-8 -*-
# Copyright: cpuinfer.llm contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""When a front door's server may leave rotation: the rule over `show stat`'s rows (see _haproxy), kept
apart from the socket so that it is a pure function of the rows.

A server may be drained when the other servers of its backend that take requests have a slot for every
request the backend holds now (in servers and queued). While it drains, requests that queue beyond a
bound mean the others do not carry the load after all: the drain is taken back and tried again later."""

from __future__ import absolute_import, division, print_function

from ansible_collections.cpuinfer.llm.plugins.module_utils._haproxy import in_rotation

__metaclass__ = type


def backends_listing(rows, server):
    """The backends that list the server, in the order show stat gives them."""
    return [row["backend"] for row in rows if row["server"] == server]


def _servers(rows, backend):
    return [row for row in rows if row["backend"] == backend and row["server"] != "BACKEND"]


def queued(rows, backend):
    """Requests waiting for a slot, at the backend or at one of its servers."""
    return sum(row["queue"] for row in rows if row["backend"] == backend)


def backend_load(rows, backend):
    """Requests the backend holds now: in its servers and queued."""
    return sum(row["sessions"] for row in _servers(rows, backend)) + queued(rows, backend)


def others_slots(rows, backend, server):
    """Slots (maxconn) of the backend's other servers in rotation; None when one of them has no limit
    (its capacity cannot be read, so none is assumed missing)."""
    others = [row for row in _servers(rows, backend) if row["server"] != server and in_rotation(row["status"])]
    if any(row["slots"] is None for row in others):
        return None
    return sum(row["slots"] for row in others)


def others(rows, backend, server):
    """How many other servers the backend lists, in rotation or not."""
    return len([row for row in _servers(rows, backend) if row["server"] != server])


def capacity(rows, backend, server):
    """{backend, load, others_slots, fits}: whether the others can take the server's share now. A backend
    whose other servers are all out (DOWN, in MAINT) has no room even when idle: the next request would
    find no server. A backend of one server has no others to wait for: it fits (its requests queue)."""
    load, slots = backend_load(rows, backend), others_slots(rows, backend, server)
    if not others(rows, backend, server):
        fits = True
    else:
        fits = slots is None or (slots >= 1 and load <= slots)
    return {"backend": backend, "load": load, "others_slots": slots, "fits": fits}


def sessions(rows, backend, server):
    return sum(row["sessions"] for row in _servers(rows, backend) if row["server"] == server)


def status(rows, backend, server):
    return next((row["status"] for row in _servers(rows, backend) if row["server"] == server), None)


def queue_bound(rows, backend, server, max_queue):
    """The queue a drain tolerates: max_queue, or where it is None one request per slot of the others."""
    if max_queue is not None:
        return max_queue
    return others_slots(rows, backend, server) or 0
