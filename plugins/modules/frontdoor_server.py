#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright: cpuinfer.llm contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import absolute_import, division, print_function

__metaclass__ = type

DOCUMENTATION = r"""
module: frontdoor_server
short_description: Take a server out of a front door's rotation only when the others carry the load, or put it back
version_added: 1.1.0
description:
  - Runs on a front door (HAProxy) and talks to its runtime API socket.
  - O(state=drained) sets the server to DRAIN in every backend that lists it, but only once the other
    servers of that backend that take requests have a slot (C(maxconn)) for every request the backend
    holds now, in servers and queued, and at least one slot; until then it waits, and says so in
    RV(events) and a warning. A backend that lists no other server is drained at once.
    Then it waits until the server's sessions are 0. While it waits, a queue longer than O(max_queue)
    means the others do not carry the load after all - the server is put back in rotation and the
    drain is tried again once there is room (back-pressure).
  - O(state=ready) clears DRAIN and MAINT and waits until HAProxy's own health check reports the
    server UP.
  - A server no backend lists (an instance new in this run) is left alone.
  - When O(timeout) passes, or any step fails, the server is put back in the state it had and the task
    fails saying why.
author: cpuinfer.llm maintainers (@cpuinfer)
options:
  socket:
    description: The runtime API socket (C(stats socket ... level admin)).
    type: path
    default: /run/haproxy/admin.sock
  server:
    description: The server's name in the backends (the same on every front door).
    type: str
    required: true
  state:
    description:
      - V(drained) out of rotation with its sessions ended; V(ready) in rotation with its check passing.
    type: str
    choices: [drained, ready]
    required: true
  timeout:
    description: Seconds the whole wait may take (for capacity, for sessions to end, for the check).
    type: float
    default: 600
  interval:
    description: Seconds between two reads of the servers' state.
    type: float
    default: 1
  require_capacity:
    description:
      - V(false) drains at once whatever the others can carry.
    type: bool
    default: true
  missing_socket:
    description:
      - V(fail) fails when O(socket) does not exist; V(skip) reports that no front door runs there and changes
        nothing (a first converge restarts instances before any front door runs).
    type: str
    choices: [fail, skip]
    default: fail
  max_queue:
    description:
      - Requests queued in the backend while the server drains above which it is put back in rotation.
        Default one per slot of the other servers.
    type: int
"""

EXAMPLES = r"""
- name: Out of rotation before a restart, once the other instances can take its requests
  cpuinfer.llm.frontdoor_server:
    server: infer-1--tiny-llama
    state: drained
    timeout: 600
  delegate_to: frontdoor-1

- name: Back in rotation once its health check passes
  cpuinfer.llm.frontdoor_server:
    server: infer-1--tiny-llama
    state: ready
    timeout: 300
  delegate_to: frontdoor-1
"""

RETURN = r"""
backends:
  description: Each backend that lists the server, its status before and after, and (drained) the load and the others' slots when it was drained.
  returned: always
  type: list
  elements: dict
  sample: [{backend: tiny-llama, before: UP, after: DRAIN, load: 1, others_slots: 2}]
waited_for_capacity_s:
  description: Seconds spent waiting until the others could carry the load.
  returned: always
  type: float
  sample: 12.0
put_back:
  description: How often a drain was taken back because the queue outgrew O(max_queue).
  returned: always
  type: int
  sample: 0
running:
  description: Whether a front door answered on O(socket) (V(false) only with O(missing_socket=skip)).
  returned: always
  type: bool
  sample: true
events:
  description: What the wait saw, in order (waits for capacity, drains taken back).
  returned: always
  type: list
  elements: str
  sample: ["waited 12 s: backend tiny-llama holds 3 requests, the others have 2 slots"]
"""

import os
import time

from ansible_collections.cpuinfer.llm.plugins.module_utils import _haproxy, _rotation
from ansible_collections.cpuinfer.llm.plugins.module_utils._errors import HostError
from ansible_collections.cpuinfer.llm.plugins.module_utils._runner import Step, refuse_if, run_module

ARGUMENT_SPEC = dict(
    socket=dict(type="path", default="/run/haproxy/admin.sock"),
    server=dict(type="str", required=True),
    state=dict(type="str", choices=["drained", "ready"], required=True),
    timeout=dict(type="float", default=600),
    interval=dict(type="float", default=1),
    require_capacity=dict(type="bool", default=True),
    max_queue=dict(type="int"),
    missing_socket=dict(type="str", choices=["fail", "skip"], default="fail"),
)

# the runtime API's word for the admin state a status shows (NOLB only comes from a check; drain is nearest)
_ADMIN_STATE = (("MAINT", "maint"), ("DRAIN", "drain"), ("NOLB", "drain"))


def _admin_state(status):
    return next((state for prefix, state in _ADMIN_STATE if status.startswith(prefix)), "ready")


def _planned(status, state):
    """The status check mode reports: what the server would show once the run is done."""
    if state == "drained":
        return status if _haproxy.out_of_rotation(status) else "DRAIN"
    return "UP"


def _check(params):
    problems = []
    if not params["server"] or any(c in params["server"] for c in "/ \n;"):
        problems.append("server %r: give the server's name alone (no '/', space or ';')" % params["server"])
    if not params["timeout"] > 0:
        problems.append("timeout must be above 0")
    if not params["interval"] > 0:
        problems.append("interval must be above 0")
    if params["max_queue"] is not None and params["max_queue"] < 0:
        problems.append("max_queue must be 0 or more")
    refuse_if(problems)


def _set_steps(socket_path, server, backends, state, rows):
    """Steps that set the server's admin state in each backend; each undo puts back the one it had."""
    steps = []
    for backend in backends:
        before = _admin_state(_rotation.status(rows, backend, server))
        steps.append(Step("set %s/%s state %s" % (backend, server, state),
                          lambda b=backend: _haproxy.set_state(socket_path, b, server, state),
                          lambda b=backend, s=before: _haproxy.set_state(socket_path, b, server, s)))
    return steps


class _Wait:
    """The one deadline of a run, and what it saw while waiting."""

    def __init__(self, module):
        self.params = module.params
        self.started = time.monotonic()
        self.events = []
        self.waited_for_capacity = 0.0
        self.put_back = 0

    def elapsed(self):
        return time.monotonic() - self.started

    def rows(self):
        return _haproxy.show_stat(self.params["socket"])

    def sleep_or_fail(self, why):
        if self.elapsed() + self.params["interval"] > self.params["timeout"]:
            raise HostError("%s/%s: gave up after %.0f s (timeout %s): %s; the server is put back as it was" % (
                self.params["socket"], self.params["server"], self.elapsed(), self.params["timeout"], why))
        time.sleep(self.params["interval"])


def _short_of_capacity(rows, backends, server):
    checks = [_rotation.capacity(rows, backend, server) for backend in backends]
    return [check for check in checks if not check["fits"]], checks


def _wait_for_capacity(wait, backends, server):
    """Rows once every backend's others can take the server's share (the capacity checks at that time)."""
    since, short_seen = wait.elapsed(), False
    while True:
        rows = wait.rows()
        short, checks = _short_of_capacity(rows, backends, server)
        if not short or not wait.params["require_capacity"]:
            break
        short_seen = True
        why = "; ".join("backend %s holds %d requests, its other servers in rotation have %d slots"
                        % (c["backend"], c["load"], c["others_slots"]) for c in short)
        wait.sleep_or_fail("the others cannot carry the load: " + why)
    if short_seen:
        wait.waited_for_capacity += wait.elapsed() - since
        then = ", ".join("%s: %d requests, %s slots" % (c["backend"], c["load"], c["others_slots"]) for c in checks)
        wait.events.append("waited %.0f s for the others to carry the load before draining (then %s)" % (wait.elapsed() - since, then))
    return rows, checks


def _queue_outgrown(rows, backends, server, max_queue):
    """(backend, queued, bound) of each backend whose queue is above its bound."""
    found = [(backend, _rotation.queued(rows, backend), _rotation.queue_bound(rows, backend, server, max_queue))
             for backend in backends]
    return [item for item in found if item[1] > item[2]]


def _drain(module, journal, wait, rows, backends):
    server = module.params["server"]
    to_drain = [b for b in backends if not _haproxy.out_of_rotation(_rotation.status(rows, b, server))]
    checks = {}
    if module.check_mode:
        return bool(to_drain), rows, checks
    while True:
        if to_drain:
            rows, found = _wait_for_capacity(wait, to_drain, server)
            checks = dict((c["backend"], c) for c in found)
            journal.apply(_set_steps(module.params["socket"], server, to_drain, "drain", rows))
        while True:
            rows = wait.rows()
            if not any(_rotation.sessions(rows, b, server) for b in backends):
                return bool(to_drain), rows, checks
            outgrown = _queue_outgrown(rows, to_drain, server, module.params["max_queue"])
            if outgrown:
                break
            wait.sleep_or_fail("its sessions did not end (%s)" % ", ".join(
                "%s: %d" % (b, _rotation.sessions(rows, b, server)) for b in backends))
        # the others queue what it no longer takes: back in rotation until there is room again
        failures = journal.rollback()
        if failures:
            raise HostError("the queue outgrew its bound while %s drained, and it could not be put back: %s"
                            % (server, "; ".join(failures)))
        wait.put_back += 1
        wait.events.append("put back in rotation after %.0f s: %s" % (wait.elapsed(), ", ".join(
            "backend %s queues %d requests (bound %d)" % item for item in outgrown)))
        wait.sleep_or_fail("the queue outgrew its bound while it drained")


def _ready(module, journal, wait, rows, backends):
    server = module.params["server"]
    to_ready = [b for b in backends if _haproxy.out_of_rotation(_rotation.status(rows, b, server))]
    if module.check_mode:
        return bool(to_ready), rows, {}
    journal.apply(_set_steps(module.params["socket"], server, to_ready, "ready", rows))
    while True:
        rows = wait.rows()
        down = [(b, _rotation.status(rows, b, server)) for b in backends
                if not _haproxy.in_rotation(_rotation.status(rows, b, server))]
        if not down:
            return bool(to_ready), rows, {}
        wait.sleep_or_fail("its health check does not pass (%s)" % ", ".join("%s: %s" % item for item in down))


def converge(module, journal):
    _check(module.params)
    server, wait = module.params["server"], _Wait(module)
    if module.params["missing_socket"] == "skip" and not os.path.exists(module.params["socket"]):
        return dict(changed=False, running=False, backends=[], events=[], put_back=0, waited_for_capacity_s=0.0)
    rows = wait.rows()
    backends = _rotation.backends_listing(rows, server)
    before = dict((b, _rotation.status(rows, b, server)) for b in backends)
    act = _drain if module.params["state"] == "drained" else _ready
    changed, rows, checks = act(module, journal, wait, rows, backends) if backends else (False, rows, {})
    after = dict((b, _planned(before[b], module.params["state"]) if module.check_mode else _rotation.status(rows, b, server))
                 for b in backends)
    if wait.events:
        module.warn("%s: %s" % (server, "; ".join(wait.events)))
    result = dict(changed=changed, running=True, put_back=wait.put_back, events=wait.events,
                  waited_for_capacity_s=round(wait.waited_for_capacity, 1),
                  backends=[dict(backend=b, before=before[b], after=after[b], **dict(
                      (k, v) for k, v in checks.get(b, {}).items() if k in ("load", "others_slots"))) for b in backends])
    if module._diff:
        result["diff"] = dict(before="".join("%s/%s: %s\n" % (b, server, before[b]) for b in backends),
                              after="".join("%s/%s: %s\n" % (b, server, after[b]) for b in backends))
    return result


def main():
    run_module(ARGUMENT_SPEC, converge)


if __name__ == "__main__":
    main()
