# -*- coding: utf-8 -*-
# Copyright: cpuinfer.llm contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The front door's plan: one HAProxy backend per model name, one server per instance behind it.

The code of the frontdoor filters (plugins/filter/frontdoor.py names them)."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import re

from ansible.errors import AnsibleFilterError
from ansible_collections.cpuinfer.llm.plugins.module_utils._haproxy import RuntimeApiError, out_of_rotation, parse_show_stat

# HAProxy's names allow letters, digits, '-', '_', '.' and ':'; an inventory name may hold more.
_UNSAFE = re.compile(r"[^A-Za-z0-9_.:-]")


def frontdoor_server_name(host, instance):
    """The HAProxy server name of one instance on one host: the same on every front door and in the
    drain a restart does on that host."""
    return "%s--%s" % (_UNSAFE.sub("_", str(host)), instance)


def _port(value, what, problems):
    try:
        port = int(value)
    except (TypeError, ValueError):
        problems.append("%s: port %r is not a number" % (what, value))
        return None
    if isinstance(value, bool) or not 0 < port < 65536:
        problems.append("%s: port %r is not between 1 and 65535" % (what, value))
        return None
    return port


def _maxconn(instance, override, where, problems):
    if override in (None, ""):
        value = instance.get("parallel", 1)
    else:
        value = override
    try:
        maxconn = int(value)
    except (TypeError, ValueError):
        maxconn = 0
    if isinstance(value, bool) or maxconn < 1:
        problems.append("%s: maxconn %r is below 1: a server with no connection slot could never serve"
                        % (where, value))
    return maxconn


def _served_by(hosts, hostvars, problems):
    """[(host, address, instance)] of every instance llama_server reported in this run."""
    served = []
    for host in hosts:
        facts = hostvars.get(host) or {}
        instances = facts.get("llama_server_served")
        if instances is None:
            if facts.get("llama_server_instances"):
                problems.append("%s declares llama_server_instances but was not converged in this run "
                                "(no llama_server_served): converge it in the same run as the front door" % host)
            continue
        address = facts.get("frontdoor_server_address") or facts.get("ansible_host") or host
        served += [(host, str(address), instance) for instance in instances]
    return served


def frontdoor_backends(hosts, hostvars, ports=None, port_offset=1000, server_maxconn=None, reserved_ports=None):
    """{'backends': [{name, port, servers: [{name, host, instance, address, port, maxconn}]}], 'problems'}
    from the instances each of hosts serves (llama_server's fact llama_server_served: name, base_name,
    port, parallel, model_sha256). A model's listener is ports[name], else its first instance's port
    + port_offset. Every request the front door must refuse is in problems, all at once."""
    if not isinstance(hosts, (list, tuple)):
        raise AnsibleFilterError("frontdoor_backends: hosts must be a list of inventory names")
    problems, by_model = [], {}
    for host, address, instance in _served_by(hosts, hostvars, problems):
        model = instance.get("base_name") or instance.get("name")
        where = "%s instance %s" % (host, instance.get("name"))
        port = _port(instance.get("port"), where, problems)
        server = {"name": frontdoor_server_name(host, instance.get("name")), "host": host,
                  "instance": instance.get("name"), "address": address, "port": port,
                  "maxconn": _maxconn(instance, server_maxconn, where, problems),
                  "model_sha256": instance.get("model_sha256")}
        by_model.setdefault(model, []).append(server)
    if not by_model and not problems:
        problems.append("the front door has no instances behind it: none of %s serves one (llama_server_served); "
                        "give the backend hosts llama_server_instances" % (", ".join(hosts) or "no hosts"))
    backends = []
    for model in sorted(by_model):
        servers = by_model[model]
        models = sorted({s["model_sha256"] for s in servers if s["model_sha256"]})
        if len(models) > 1:
            problems.append("model name %s names %d different models (%s): one address per model needs one model "
                            "per name" % (model, len(models), "; ".join(
                                "%s on %s" % (sha[:12], ", ".join(s["name"] for s in servers if s["model_sha256"] == sha))
                                for sha in models)))
        listen = (ports or {}).get(model)
        first_port = servers[0]["port"] or 0
        listen = _port(listen if listen is not None else first_port + int(port_offset), "model %s listener" % model, problems)
        backends.append({"name": model, "port": listen, "servers": servers})
    _listener_clashes(backends, reserved_ports or {}, problems)
    _endpoint_clashes(backends, problems)
    return {"backends": backends, "problems": problems}


def _endpoint_clashes(backends, problems):
    """Two servers at one address and port are one instance counted twice: its capacity doubled in every drain
    decision, and another host's instance never served (a backend address that fell back to a default did it)."""
    by_endpoint = {}
    for server in (s for backend in backends for s in backend["servers"] if s["port"] is not None):
        by_endpoint.setdefault((server["address"], server["port"]), []).append(server["name"])
    for (address, port), names in sorted(by_endpoint.items()):
        if len(names) > 1:
            problems.append("servers %s are all at %s:%d: each host's frontdoor_server_address must be where the front "
                            "door reaches that host" % (", ".join(names), address, port))


def _listener_clashes(backends, reserved_ports, problems):
    taken = dict((int(port), what) for what, port in reserved_ports.items())
    for backend in backends:
        if backend["port"] is None:
            continue
        if backend["port"] in taken:
            problems.append("model %s: listener port %d is also %s" % (backend["name"], backend["port"], taken[backend["port"]]))
        taken[backend["port"]] = "model %s's listener" % backend["name"]


def frontdoor_states(show_stat):
    """[{backend, server, status, sessions, queue, out_of_rotation}] of every server in the text the
    runtime API's `show stat` answers (CSV with a '# ' header)."""
    try:
        rows = parse_show_stat(show_stat)
    except RuntimeApiError as exc:
        raise AnsibleFilterError("frontdoor_states: %s" % exc)
    return [{"backend": row["backend"], "server": row["server"], "status": row["status"], "sessions": row["sessions"],
             "queue": row["queue"], "out_of_rotation": out_of_rotation(row["status"])}
            for row in rows if row["server"] != "BACKEND"]


def frontdoor_setting(state):
    """One server's state as a verify row {setting, wanted, actual, in_sync}: wanted in rotation."""
    return {"setting": "front door server %s/%s" % (state["backend"], state["server"]),
            "wanted": "in rotation (not DRAIN or MAINT)", "actual": state["status"],
            "in_sync": not state["out_of_rotation"]}
