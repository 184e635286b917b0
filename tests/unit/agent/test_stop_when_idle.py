"""The instance's ExecStop: wait while the engine holds requests, kill it at the deadline, idle when gone."""

import http.server
import signal

import pytest

from cpuinfer_agent import stop_when_idle

METRICS = ("# HELP llamacpp:requests_processing Number of requests processing.\n"
           "# TYPE llamacpp:requests_processing gauge\nllamacpp:requests_processing %d\n"
           "# HELP llamacpp:requests_deferred Number of requests deferred.\n"
           "# TYPE llamacpp:requests_deferred gauge\nllamacpp:requests_deferred %d\n")


def engine(held_sequence, key=""):
    """An engine whose /metrics reports the next (processing, deferred) pair on every call."""
    calls = list(held_sequence)

    class Metrics(http.server.BaseHTTPRequestHandler):
        def do_GET(self):  # noqa: N802 (http.server's name)
            if key and self.headers.get("Authorization") != "Bearer " + key:
                self.send_response(401)
                self.end_headers()
                return
            processing, deferred = calls.pop(0) if len(calls) > 1 else calls[0]
            body = (METRICS % (processing, deferred)).encode()
            self.send_response(200)
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, *args):
            pass

    return Metrics


class Clock:
    def __init__(self):
        self.now = 0.0

    def __call__(self):
        return self.now

    def sleep(self, seconds):
        self.now += seconds


def test_it_waits_until_processing_and_deferred_are_zero_twice(serve):
    port = serve(engine([(2, 1), (1, 0), (0, 1), (0, 0), (0, 0)]))
    clock = Clock()
    assert stop_when_idle.wait_idle(port, 60, clock=clock, sleep=clock.sleep) == "idle"
    assert clock.now == 2.0  # five polls, four sleeps of 0.5 s


def test_one_idle_poll_between_busy_ones_is_not_idle(serve):
    port = serve(engine([(0, 0), (1, 0), (0, 0), (0, 0)]))
    clock = Clock()
    assert stop_when_idle.wait_idle(port, 60, clock=clock, sleep=clock.sleep) == "idle"
    assert clock.now == 1.5


def test_requests_still_running_at_the_deadline_time_out(serve):
    port = serve(engine([(1, 0)]))
    clock = Clock()
    assert stop_when_idle.wait_idle(port, 3, clock=clock, sleep=clock.sleep) == "timeout"
    assert clock.now == 3.0


def test_the_key_from_the_units_key_file_is_sent(serve, tmp_path, capsys):
    key_file = tmp_path / "tiny.key"
    key_file.write_text("secret-key\n")
    port = serve(engine([(0, 0)], key="secret-key"))
    assert stop_when_idle.main([str(port), "5", "0", str(key_file)]) == 0
    assert "no request in flight" in capsys.readouterr().err


def test_an_engine_that_refuses_the_key_is_reported_not_taken_as_idle(serve, tmp_path, capsys):
    key_file = tmp_path / "tiny.key"
    key_file.write_text("wrong")
    port = serve(engine([(1, 0)], key="secret-key"))
    with pytest.raises(stop_when_idle.Refused):
        stop_when_idle.requests_held(port, "wrong")
    assert stop_when_idle.main([str(port), "5", "0", str(key_file)]) == 1
    assert "cannot tell whether the engine is idle (HTTP 401)" in capsys.readouterr().err


def test_a_key_file_it_cannot_read_is_reported(serve, tmp_path, capsys):
    port = serve(engine([(0, 0)]))
    assert stop_when_idle.main([str(port), "5", "0", str(tmp_path / "missing.key")]) == 1
    assert "cannot tell whether the engine is idle" in capsys.readouterr().err


def test_an_engine_that_does_not_answer_is_gone():
    assert stop_when_idle.wait_idle(1, 60) == "gone"


def test_main_kills_the_server_at_the_deadline_and_not_before(serve):
    killed = []
    busy = serve(engine([(1, 0)]))
    assert stop_when_idle.main([str(busy), "0", "4242"], kill=lambda pid, sig: killed.append((pid, sig))) == 0
    assert killed == [(4242, signal.SIGKILL)]
    killed.clear()
    idle = serve(engine([(0, 0)]))
    assert stop_when_idle.main([str(idle), "5", "4242"], kill=lambda pid, sig: killed.append((pid, sig))) == 0
    assert killed == []


def test_main_refuses_a_wrong_argument_count():
    assert stop_when_idle.main(["1"]) == 2
