"""cpuinfer-served-rate against a fake engine server it starts itself: a prompt costs PREFILL_S per 100
tokens before the first token, each later token GAP_S; requests at once share nothing (the fake has no
slots), so their rates add up."""

import json
import socket
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

AGENT = Path(__file__).resolve().parents[3] / "agent"
sys.path.insert(0, str(AGENT))

from cpuinfer_agent import served_rate  # noqa: E402

PREFILL_S = 0.02
GAP_S = 0.01
FAKE = textwrap.dedent('''
    import http.server, json, sys, time
    class Engine(http.server.BaseHTTPRequestHandler):
        def do_GET(self):
            self.send_response(200 if self.path == "/health" else 404)
            self.end_headers()
        def do_POST(self):
            body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
            self.send_response(200)
            self.send_header("Content-Type", "text/event-stream")
            self.end_headers()
            time.sleep(len(body["prompt"]) / 100 * %(prefill)r)
            for index in range(body["max_tokens"]):
                if index:
                    time.sleep(%(gap)r)
                self.wfile.write(b'data: {"choices": [{"text": "t"}]}\\n\\n')
                self.wfile.flush()
            self.wfile.write(b"data: [DONE]\\n\\n")
        def log_message(self, *args):
            pass
    http.server.ThreadingHTTPServer(("127.0.0.1", int(sys.argv[1])), Engine).serve_forever()
''') % {"prefill": PREFILL_S, "gap": GAP_S}


def free_port():
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def run(*args):
    env = {"PYTHONPATH": str(AGENT)}
    return subprocess.run([sys.executable, "-m", "cpuinfer_agent.served_rate", *args], capture_output=True, text=True,
                          timeout=120, env=env, check=False)


def test_rates_of_one_stream_and_of_streams_at_once(tmp_path):
    fake = tmp_path / "engine.py"
    fake.write_text(FAKE)
    port = free_port()
    done = run("--requests", "2", "--streams", "2", "--prompt", "200", "--generated", "11", str(port), "--",
               sys.executable, str(fake), str(port))
    assert done.returncode == 0, done.stderr
    result = json.loads(done.stdout)
    # a machine under load stretches the fake's sleeps, never shortens them: rates are bounded from above
    single = result["1"]
    assert 200 / (2 * PREFILL_S) * 0.5 <= single["prefill"] <= 200 / (2 * PREFILL_S) * 1.05
    assert 1 / GAP_S * 0.5 <= single["decode"] <= 1 / GAP_S * 1.05
    # two streams at once: twice the tokens in about the same time
    assert result["2"]["prefill"] > 1.4 * single["prefill"] and result["2"]["decode"] > 1.4 * single["decode"]
    assert result["requests"] == 2
    # and the server it started is gone
    assert served_rate.health(port) is None


def test_a_server_that_dies_before_it_is_ready_is_reported(tmp_path):
    done = run(str(free_port()), "--", sys.executable, "-c", "raise SystemExit(3)")
    assert done.returncode == 1 and "exited with 3 before it was ready" in done.stderr


def test_without_a_server_argv_it_says_how_to_give_one():
    done = run("8080")
    assert done.returncode == 2 and "give the server's argv after --" in done.stderr


@pytest.mark.parametrize("requests, expected", [
    ([(0.0, [1.0, 2.0, 3.0], 3.0)], {"prefill": 100.0, "decode": 1.0}),
    # two at once: all prompt tokens over the time to the last first token; decode over the common span
    ([(0.0, [1.0, 1.5, 2.0], 2.0), (0.0, [2.0, 3.0], 3.0)], {"prefill": 100.0, "decode": 1.5}),
])
def test_rates_from_arrivals(requests, expected):
    assert served_rate.rates(requests, 100) == expected
