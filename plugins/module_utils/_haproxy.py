# -*- coding: utf-8 -*-
# Copyright: cpuinfer.llm contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""HAProxy's runtime API (the stats socket, level admin): one command per connection, and the rows of
`show stat`. The only place the collection talks to a front door's socket; it takes the socket's path,
so tests run it against a fake HAProxy in a temporary directory."""

from __future__ import absolute_import, division, print_function

import socket

from ansible_collections.cpuinfer.llm.plugins.module_utils._errors import HostError

__metaclass__ = type

# Admin states an operator or a run puts a server in; a health state (UP, DOWN) is not one.
OUT_OF_ROTATION = ("DRAIN", "MAINT", "NOLB")


class RuntimeApiError(HostError):
    """The socket could not be reached, or HAProxy refused or did not understand a command."""


def command(socket_path, text, timeout=10.0):
    """HAProxy's whole answer to one command (non-interactive mode: it closes after answering)."""
    client = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    client.settimeout(timeout)
    try:
        client.connect(socket_path)
        client.sendall(text.encode("ascii") + b"\n")
        chunks = []
        while True:
            chunk = client.recv(65536)
            if not chunk:
                break
            chunks.append(chunk)
    except (OSError, socket.timeout) as exc:
        raise RuntimeApiError("HAProxy runtime API %s, %r: %s" % (socket_path, text, getattr(exc, "strerror", None) or exc))
    finally:
        client.close()
    return b"".join(chunks).decode("utf-8", "replace")


def _count(value):
    return int(value) if value not in (None, "") else 0


def parse_show_stat(text):
    """[{backend, server, status, sessions, queue, slots}] of every server and every BACKEND row (server
    'BACKEND') in `show stat`'s CSV; slots is the server's maxconn, None where it has none."""
    lines = [line for line in str(text).splitlines() if line.strip()]
    if not lines or not lines[0].startswith("# pxname,svname,"):
        raise RuntimeApiError("not the answer of show stat: %r" % (lines[:1],))
    header = lines[0][2:].split(",")
    rows = []
    for line in lines[1:]:
        row = dict(zip(header, line.split(",")))
        if row.get("svname") == "FRONTEND":
            continue
        rows.append({"backend": row["pxname"], "server": row["svname"], "status": row.get("status", ""),
                     "sessions": _count(row.get("scur")), "queue": _count(row.get("qcur")),
                     "slots": int(row["slim"]) if row.get("slim") not in (None, "") else None})
    return rows


def show_stat(socket_path):
    return parse_show_stat(command(socket_path, "show stat"))


def out_of_rotation(status):
    return any(status.startswith(state) for state in OUT_OF_ROTATION)


def in_rotation(status):
    """Takes new requests: its check passes (UP, not going down) or it has none, and no admin state."""
    return status == "UP" or status == "no check"


def set_state(socket_path, backend, server, state):
    """set server BACKEND/SERVER state ready|drain|maint; HAProxy answers nothing when it agrees."""
    answer = command(socket_path, "set server %s/%s state %s" % (backend, server, state)).strip()
    if answer:
        raise RuntimeApiError("HAProxy refused to set %s/%s to %s: %s" % (backend, server, state, answer))
