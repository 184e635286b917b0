"""cpuinfer-served-rate against a fake engine server it starts itself: a prompt costs PREFILL_S per 100
tokens before the first token, each later token GAP_S; requests at once share nothing (the fake has no
slots), so their rates add up. The fake's vocabulary is 100 tokens: a prompt id outside it gets 400."""

import json
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
    import http.server, json, os, sys, time
    class Engine(http.server.BaseHTTPRequestHandler):
        def do_GET(self):
            self.send_response(200 if self.path == "/health" else 404)
            self.end_headers()
        def do_POST(self):
            body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
            if self.path == "/tokenize":
                words = body["content"].split()
                reply = json.dumps({"tokens": [sum(map(ord, word)) %% 100 for word in words]}).encode()
                self.send_response(200)
                self.send_header("Content-Length", str(len(reply)))
                self.end_headers()
                self.wfile.write(reply)
                return
            if %(die)r in sys.argv:
                sys.stderr.write("GGML_ASSERT(fake) failed\\n")
                sys.stderr.flush()
                os._exit(134)
            if max(body["prompt"]) >= 100:
                self.send_response(400)
                self.end_headers()
                return
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
''') % {"prefill": PREFILL_S, "gap": GAP_S, "die": "--die"}


def run(*args):
    env = {"PYTHONPATH": str(AGENT)}
    return subprocess.run([sys.executable, "-m", "cpuinfer_agent.served_rate", *args], capture_output=True, text=True,
                          timeout=120, env=env, check=False)


def test_rates_of_one_stream_and_of_streams_at_once(tmp_path):
    fake = tmp_path / "engine.py"
    fake.write_text(FAKE)
    port = served_rate.free_port()
    # prompts from the model's own tokenization: the fake refuses any id beyond its 100
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


def test_a_server_that_dies_before_it_is_ready_is_reported_with_its_last_words(tmp_path):
    done = run(str(served_rate.free_port()), "--", sys.executable, "-c", "import sys; sys.exit('no model here')")
    assert done.returncode == 1 and "exited with 1 before it was ready: no model here" in done.stderr


def test_port_0_takes_a_free_port_and_a_server_that_dies_measured_says_its_last_words(tmp_path):
    fake = tmp_path / "engine.py"
    fake.write_text(FAKE)
    done = run("--requests", "1", "--prompt", "20", "--generated", "3", "0", "--", sys.executable, str(fake), "{port}",
               "--die")
    assert done.returncode == 1, done.stdout
    assert "the server died; its last words: GGML_ASSERT(fake) failed" in done.stderr


def test_without_a_server_argv_it_says_how_to_give_one():
    done = run("8080")
    assert done.returncode == 2 and "give the server's argv after --" in done.stderr


@pytest.mark.parametrize("requests, expected", [
    ([(0.0, [1.0, 2.0, 3.0], 3.0)], {"prefill": 100.0, "decode": 1.0, "first_spread": 0.0}),
    # two at once: all prompt tokens over the time to the last first token; decode from it, while both decode
    # (the first's tokens at 1.5 and 2.0 came while the second's prompt was still prefilled or at its first token)
    ([(0.0, [1.0, 1.5, 2.0], 2.0), (0.0, [2.0, 3.0], 3.0)], {"prefill": 100.0, "decode": 1.0, "first_spread": 1.0}),
    ([(0.0, [1.0, 2.0, 3.0], 3.0), (0.0, [1.0, 2.0, 3.0], 3.0)], {"prefill": 200.0, "decode": 2.0, "first_spread": 0.0}),
])
def test_rates_from_arrivals(requests, expected):
    assert served_rate.rates(requests, 100) == expected
