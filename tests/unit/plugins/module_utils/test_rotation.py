"""The rule of when a server may leave rotation, over show stat's rows."""

from ansible_collections.cpuinfer.llm.plugins.module_utils import _rotation


def row(server, status="UP", sessions=0, queue=0, slots=1, backend="tiny"):
    return {"backend": backend, "server": server, "status": status, "sessions": sessions, "queue": queue, "slots": slots}


ROWS = [row("a", sessions=1, slots=2), row("b", sessions=1), row("c", "DOWN", slots=4), row("d", "DRAIN", sessions=1, slots=4),
        row("BACKEND", queue=1, slots=10), row("x", sessions=9, backend="other")]


def test_load_counts_every_server_session_and_every_queue_of_the_backend_only():
    assert _rotation.backend_load(ROWS, "tiny") == 4
    assert _rotation.queued(ROWS, "tiny") == 1


def test_others_slots_count_only_servers_in_rotation_other_than_the_one_drained():
    assert _rotation.others_slots(ROWS, "tiny", "a") == 1  # b; c is DOWN, d is DRAIN
    assert _rotation.others_slots(ROWS, "tiny", "b") == 2


def test_the_drain_fits_only_when_the_others_have_a_slot_for_every_request():
    assert _rotation.capacity(ROWS, "tiny", "a") == {"backend": "tiny", "load": 4, "others_slots": 1, "fits": False}
    calm = [row("a", sessions=1, slots=2), row("b", slots=2), row("BACKEND", slots=10)]
    assert _rotation.capacity(calm, "tiny", "a")["fits"] is True
    assert _rotation.capacity(calm + [row("e", sessions=3, slots=1)], "tiny", "a")["fits"] is False


def test_a_backend_of_one_server_has_no_others_to_wait_for():
    assert _rotation.capacity([row("a")], "tiny", "a")["fits"] is True
    assert _rotation.capacity([row("a", sessions=1), row("BACKEND", slots=10)], "tiny", "a")["fits"] is True


def test_others_all_out_of_rotation_leave_no_room_even_when_idle():
    # the next request would find no server: the lab saw 503s after its queue timeout this way
    assert _rotation.capacity([row("a"), row("b", "DOWN")], "tiny", "a") == {
        "backend": "tiny", "load": 0, "others_slots": 0, "fits": False}
    assert _rotation.capacity([row("a"), row("b", "DRAIN")], "tiny", "a")["fits"] is False
    assert _rotation.capacity([row("a"), row("b", "DRAIN"), row("c")], "tiny", "a")["fits"] is True


def test_an_other_server_without_maxconn_cannot_be_counted_so_nothing_is_assumed_short():
    rows = [row("a", sessions=1), row("b", slots=None)]
    assert _rotation.capacity(rows, "tiny", "a") == {"backend": "tiny", "load": 1, "others_slots": None, "fits": True}


def test_the_queue_bound_is_one_request_per_slot_of_the_others_unless_given():
    assert _rotation.queue_bound(ROWS, "tiny", "b", None) == 2
    assert _rotation.queue_bound(ROWS, "tiny", "b", 7) == 7


def test_sessions_status_and_the_backends_that_list_a_server():
    assert _rotation.sessions(ROWS, "tiny", "d") == 1 and _rotation.status(ROWS, "tiny", "c") == "DOWN"
    assert _rotation.status(ROWS, "tiny", "nobody") is None
    assert _rotation.backends_listing(ROWS + [row("a", backend="other")], "a") == ["tiny", "other"]
