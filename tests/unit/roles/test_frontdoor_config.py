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


def test_checks_take_a_server_out_after_two_failures_of_five_seconds_unless_told_otherwise():
    assert "    timeout check 5s\n" in render() and " fall 2 rise 2\n" in render()
    lab = render(frontdoor_check_timeout="20s", frontdoor_check_fall=4)
    assert "    timeout check 20s\n" in lab and " fall 4 rise 2\n" in lab
