"""HAProxy's configuration as the frontdoor role renders it: what a request does when an instance refuses it."""

from pathlib import Path

import jinja2
import yaml

ROLE = Path(__file__).resolve().parents[3] / "roles" / "frontdoor"
PLAN = {"backends": [{"name": "tiny", "port": 9081, "servers": [
    {"name": "h1--tiny", "host": "h1", "instance": "tiny", "address": "127.0.0.1", "port": 8081, "maxconn": 1}]}]}


def render(**overrides):
    variables = dict(yaml.safe_load((ROLE / "defaults" / "main.yml").read_text()), ansible_managed="managed",
                     __frontdoor_plan=PLAN, **overrides)
    template = jinja2.Environment(undefined=jinja2.StrictUndefined).from_string((ROLE / "templates" / "haproxy.cfg.j2").read_text())
    return template.render(**variables)


def test_a_refused_request_goes_to_another_server_by_default():
    config = render()
    assert "    retry-on conn-failure empty-response 503\n" in config
    assert "    option redispatch 1\n" in config  # every retry on another server, not the one that refused


def test_an_empty_retry_list_leaves_haproxys_own_default():
    assert "retry-on" not in render(frontdoor_retry_on=[])
