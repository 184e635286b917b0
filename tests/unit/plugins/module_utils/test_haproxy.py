"""The runtime API helper against a fake HAProxy on a unix socket."""

import pytest

from ansible_collections.cpuinfer.llm.plugins.module_utils import _haproxy

from fake_haproxy import FakeHAProxy, server


@pytest.fixture
def fake():
    proxy = FakeHAProxy({"tiny": {"a--tiny": server(sessions=1, slots=2), "b--tiny": server("DRAIN", queue=2, slots=None)}})
    yield proxy
    proxy.close()


def test_show_stat_reads_servers_and_the_backend_row_not_the_frontend(fake):
    rows = _haproxy.show_stat(fake.path)
    assert [(r["backend"], r["server"], r["status"], r["sessions"], r["queue"], r["slots"]) for r in rows] == [
        ("tiny", "a--tiny", "UP", 1, 0, 2), ("tiny", "b--tiny", "DRAIN", 0, 2, None), ("tiny", "BACKEND", "UP", 1, 0, 10)]


def test_set_state_changes_the_server_and_a_refusal_is_an_error(fake):
    _haproxy.set_state(fake.path, "tiny", "a--tiny", "drain")
    assert fake.status("tiny", "a--tiny") == "DRAIN"
    with pytest.raises(_haproxy.RuntimeApiError, match="refused to set tiny/nobody to drain: No such server"):
        _haproxy.set_state(fake.path, "tiny", "nobody", "drain")


def test_an_unreachable_socket_is_an_error_naming_it(tmp_path):
    with pytest.raises(_haproxy.RuntimeApiError, match="admin.sock"):
        _haproxy.command(str(tmp_path / "admin.sock"), "show stat")


def test_an_answer_that_is_not_show_stat_is_refused():
    with pytest.raises(_haproxy.RuntimeApiError, match="not the answer of show stat"):
        _haproxy.parse_show_stat("Unknown command.\n")


@pytest.mark.parametrize("status, taking, out", [
    ("UP", True, False), ("no check", True, False), ("UP 1/2", False, False), ("DOWN", False, False),
    ("DOWN 1/2", False, False), ("DRAIN", False, True), ("MAINT", False, True), ("MAINT (via x/y)", False, True),
    ("NOLB", False, True)])
def test_which_statuses_take_requests_and_which_are_admin_states(status, taking, out):
    assert _haproxy.in_rotation(status) is taking
    assert _haproxy.out_of_rotation(status) is out
