"""frontdoor_server against a fake HAProxy whose sessions and queues a test scripts poll by poll."""

import pytest

from ansible_collections.cpuinfer.llm.plugins.modules import frontdoor_server

from fake_haproxy import FakeHAProxy, server

FAST = {"interval": 0.01, "timeout": 5}


@pytest.fixture
def haproxy():
    made = []

    def make(servers, tick=None, refuse=()):
        made.append(FakeHAProxy(servers, tick, refuse))
        return made[-1]
    yield make
    for fake in made:
        fake.close()


def run(run_module, fake, check=False, **args):
    return run_module(frontdoor_server, dict(FAST, socket=fake.path, **args), check=check, diff=True)


def sessions_end_after(polls, backend="tiny", name="a"):
    """A tick: the server's sessions end once it has been drained for that many polls."""
    seen = []

    def tick(fake):
        if fake.status(backend, name) == "DRAIN":
            seen.append(1)
            if len(seen) >= polls:
                fake.servers[backend][name]["sessions"] = 0
    return tick


def sets(fake):
    return [c for c in fake.commands if c.startswith("set server")]


def test_drained_once_the_others_have_room_and_its_sessions_ended(run_module, haproxy):
    fake = haproxy({"tiny": {"a": server(sessions=1), "b": server(slots=2)}}, sessions_end_after(3))
    failed, result = run(run_module, fake, server="a", state="drained")
    assert not failed, result
    assert result["changed"] and fake.status("tiny", "a") == "DRAIN" and fake.servers["tiny"]["a"]["sessions"] == 0
    assert result["backends"] == [{"backend": "tiny", "before": "UP", "after": "DRAIN", "load": 1, "others_slots": 2}]
    assert result["events"] == [] and result["warnings"] == [] and result["put_back"] == 0
    assert result["diff"] == {"before": "tiny/a: UP\n", "after": "tiny/a: DRAIN\n"}
    again = run(run_module, fake, server="a", state="drained")[1]
    assert again["changed"] is False and sets(fake) == ["set server tiny/a state drain"]


def test_it_waits_while_the_others_cannot_carry_the_load_and_says_so(run_module, haproxy):
    def tick(fake):
        if fake.polls == 6:  # two of b's three requests end: the others now have room for what a holds
            fake.servers["tiny"]["b"]["sessions"] = 1
        sessions_end(fake)
    sessions_end = sessions_end_after(2)
    fake = haproxy({"tiny": {"a": server(sessions=1, slots=2), "b": server(sessions=3, slots=3)}}, tick)
    failed, result = run(run_module, fake, server="a", state="drained")
    assert not failed, result
    assert fake.commands.index("set server tiny/a state drain") == 6  # after the sixth show stat, not before
    assert len(result["events"]) == 1 and result["events"][0].startswith("waited "), result
    assert result["warnings"] and "others to carry the load" in result["warnings"][0]


def test_it_gives_up_without_draining_when_the_others_never_have_room(run_module, haproxy):
    fake = haproxy({"tiny": {"a": server(sessions=1), "b": server(sessions=1), "BACKEND": server(queue=2, slots=None)}})
    failed, result = run(run_module, fake, server="a", state="drained", timeout=0.3)
    assert failed
    assert "the others cannot carry the load: backend tiny holds 4 requests, its other servers in rotation have 1 slots" \
        in result["msg"]
    assert sets(fake) == [] and fake.status("tiny", "a") == "UP"


def test_a_queue_that_outgrows_its_bound_puts_the_server_back_and_the_drain_is_tried_again(run_module, haproxy):
    state = {"drains": 0}

    def tick(fake):
        a, backend = fake.servers["tiny"]["a"], fake.servers["tiny"]["BACKEND"]
        if a["status"] == "DRAIN" and fake.commands[-2:-1] == ["set server tiny/a state drain"]:
            state["drains"] += 1
            backend["queue"] = 3 if state["drains"] == 1 else 0  # the first drain makes the others queue
        if a["status"] == "UP":
            backend["queue"] = 0
        if state["drains"] == 2:
            a["sessions"] = 0
    fake = haproxy({"tiny": {"a": server(sessions=1), "b": server(slots=2)}}, tick)
    failed, result = run(run_module, fake, server="a", state="drained")
    assert not failed, result
    assert sets(fake) == ["set server tiny/a state drain", "set server tiny/a state ready", "set server tiny/a state drain"]
    assert result["put_back"] == 1 and "queues 3 requests (bound 2)" in result["events"][0]
    assert fake.status("tiny", "a") == "DRAIN"


def test_sessions_that_never_end_fail_the_task_and_the_server_is_put_back(run_module, haproxy):
    fake = haproxy({"tiny": {"a": server(sessions=1), "b": server(slots=2)}})
    failed, result = run(run_module, fake, server="a", state="drained", timeout=0.3)
    assert failed and "its sessions did not end (tiny: 1)" in result["msg"]
    assert "put back" in result["msg"] and fake.status("tiny", "a") == "UP"
    assert sets(fake) == ["set server tiny/a state drain", "set server tiny/a state ready"]


def test_without_require_capacity_it_drains_at_once(run_module, haproxy):
    fake = haproxy({"tiny": {"a": server(sessions=1), "b": server(sessions=1)}}, sessions_end_after(1))
    failed, result = run(run_module, fake, server="a", state="drained", require_capacity=False)
    assert not failed and result["changed"] and result["events"] == [] and fake.commands.index("set server tiny/a state drain") == 2  # the first two looks


def test_a_backend_of_one_server_is_drained_at_once(run_module, haproxy):
    fake = haproxy({"tiny": {"a": server(sessions=1)}}, sessions_end_after(1))
    failed, result = run(run_module, fake, server="a", state="drained")
    assert not failed and result["events"] == [] and fake.commands.index("set server tiny/a state drain") == 2  # the first two looks


def test_it_waits_while_every_other_server_is_down_even_when_idle(run_module, haproxy):
    def tick(fake):
        if fake.polls == 4:
            fake.servers["tiny"]["b"]["status"] = "UP"  # its check passes again
    fake = haproxy({"tiny": {"a": server(), "b": server("DOWN")}}, tick)
    failed, result = run(run_module, fake, server="a", state="drained")
    assert not failed and fake.commands.index("set server tiny/a state drain") == 4
    assert "waited" in result["events"][0]


def test_check_mode_reports_the_drain_and_writes_nothing(run_module, haproxy):
    fake = haproxy({"tiny": {"a": server(sessions=1), "b": server(sessions=5, slots=1)}})
    failed, result = run(run_module, fake, check=True, server="a", state="drained")
    assert not failed and result["changed"] and result["diff"]["after"] == "tiny/a: DRAIN\n"
    assert sets(fake) == []


def test_a_server_already_drained_by_hand_is_waited_for_but_never_put_in_rotation(run_module, haproxy):
    fake = haproxy({"tiny": {"a": server("MAINT", sessions=1), "b": server(slots=1), "BACKEND": server(queue=5)}},
                   sessions_end_after(3, name="a"))
    fake.servers["tiny"]["a"]["status"] = "DRAIN"
    failed, result = run(run_module, fake, server="a", state="drained")
    assert not failed and result["changed"] is False and sets(fake) == []


def test_a_server_no_backend_lists_is_left_alone(run_module, haproxy):
    fake = haproxy({"tiny": {"b": server()}})
    failed, result = run(run_module, fake, server="a", state="ready")
    assert not failed and result["changed"] is False and result["backends"] == [] and sets(fake) == []


def test_ready_clears_drain_and_waits_for_the_check_to_pass(run_module, haproxy):
    def tick(fake):
        if fake.status("tiny", "a") == "UP" and fake.polls < 4:
            fake.servers["tiny"]["a"]["status"] = "DOWN 1/2"  # its check has not passed twice yet
        elif fake.status("tiny", "a") == "DOWN 1/2":
            fake.servers["tiny"]["a"]["status"] = "UP"
    fake = haproxy({"tiny": {"a": server("DRAIN")}}, tick)
    failed, result = run(run_module, fake, server="a", state="ready")
    assert not failed and result["changed"] and fake.status("tiny", "a") == "UP" and fake.polls == 3  # waited through DOWN 1/2
    assert result["diff"] == {"before": "tiny/a: DRAIN\n", "after": "tiny/a: UP\n"}


def test_ready_that_never_passes_its_check_fails_and_puts_back_the_admin_state(run_module, haproxy):
    def tick(fake):
        if fake.status("tiny", "a") == "UP":
            fake.servers["tiny"]["a"]["status"] = "DOWN"
    fake = haproxy({"tiny": {"a": server("MAINT")}}, tick)
    failed, result = run(run_module, fake, server="a", state="ready", timeout=0.3)
    assert failed and "its health check does not pass (tiny: DOWN)" in result["msg"]
    assert sets(fake) == ["set server tiny/a state ready", "set server tiny/a state maint"]


@pytest.mark.parametrize("args, words", [
    ({"server": "tiny/a"}, "give the server's name alone"), ({"interval": 0}, "interval must be above 0"),
    ({"timeout": -1}, "timeout must be above 0"), ({"max_queue": -1}, "max_queue must be 0 or more")])
def test_bad_requests_are_refused_before_the_socket_is_touched(run_module, haproxy, args, words):
    fake = haproxy({"tiny": {"a": server()}})
    failed, result = run(run_module, fake, **dict({"server": "a", "state": "drained"}, **args))
    assert failed and words in result["msg"] and fake.commands == []


def test_an_unreachable_socket_fails_with_its_path(run_module, tmp_path):
    failed, result = run_module(frontdoor_server, {"socket": str(tmp_path / "none.sock"), "server": "a", "state": "ready"})
    assert failed and "none.sock" in result["msg"]


def test_a_missing_socket_is_skipped_only_when_asked(run_module, tmp_path):
    args = {"socket": str(tmp_path / "none.sock"), "server": "a", "state": "drained"}
    failed, result = run_module(frontdoor_server, dict(args, missing_socket="skip"))
    assert not failed and result["running"] is False and result["changed"] is False
    assert run_module(frontdoor_server, args)[0] is True


def test_a_put_back_that_haproxy_refuses_fails_the_task_saying_so(run_module, haproxy):
    def tick(fake):
        fake.servers["tiny"]["BACKEND"]["queue"] = 3 if fake.status("tiny", "a") == "DRAIN" else 0
    fake = haproxy({"tiny": {"a": server(sessions=1), "b": server(slots=2)}}, tick, refuse={"set server tiny/a state ready"})
    failed, result = run(run_module, fake, server="a", state="drained")
    assert failed and "could not be put back" in result["msg"] and "Refused by the test" in result["msg"]
