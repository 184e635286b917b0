"""The health gate's probe against a local fake server that streams server-sent events."""

import http.server
import json
import subprocess
import sys
import time
from pathlib import Path

import pytest

PROBE = Path(__file__).resolve().parents[3] / "agent" / "cpuinfer_agent" / "stream_probe.py"
GAP_S = 0.05


class FakeStream(http.server.BaseHTTPRequestHandler):
    seen_auth = []

    def gap_s(self, body):  # pylint: disable=unused-argument
        """Seconds after each event of this request."""
        return GAP_S

    def do_POST(self):  # noqa: N802 (http.server's name)
        body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
        FakeStream.seen_auth.append(self.headers.get("Authorization"))
        gap_s = self.gap_s(body)
        self.send_response(200)
        self.send_header("Content-Type", "text/event-stream")
        self.end_headers()
        for index in range(body["max_tokens"]):
            self.wfile.write(b'data: {"choices": [{"text": "t%d"}]}\n\n' % index)
            self.wfile.flush()
            time.sleep(gap_s)
        self.wfile.write(b"data: [DONE]\n\n")

    def log_message(self, *args):
        pass


@pytest.fixture
def server(serve):
    return serve(FakeStream)


def test_probe_measures_rate_and_latency(server):
    out = subprocess.run([sys.executable, str(PROBE), str(server), "6", "secret"], capture_output=True, text=True,
                         check=True, timeout=30)
    result = json.loads(out.stdout)
    assert result["tokens"] == 6
    assert len(result["gaps_ms"]) == 5
    # a loaded machine (CI beside VMs) stretches the gaps, never shrinks them: only the server's pacing
    # bounds them, from below
    assert result["p50_ms"] >= GAP_S * 1000 * 0.8
    # six tokens over six gaps (the fake sleeps after each event): end to end is 1/GAP_S at most, and
    # the rate is the tokens over the whole request, as the probe reports both
    assert result["tokens_per_second"] <= 1 / GAP_S
    assert result["tokens_per_second"] == pytest.approx(6 / (result["total_ms"] / 1000), rel=0.01)
    # the decode rate is the tokens after the first over the gaps between them
    assert result["decode_tokens_per_second"] == pytest.approx(5 / (sum(result["gaps_ms"]) / 1000), rel=0.02)
    assert result["total_ms"] >= 6 * GAP_S * 1000
    assert result["p99_ms"] >= result["p50_ms"]
    assert FakeStream.seen_auth[-1] == "Bearer secret"


class BurstyStream(FakeStream):
    """All events at once after a long wait: what a buffering proxy or server does."""

    def do_POST(self):  # noqa: N802 (http.server's name)
        body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
        self.send_response(200)
        self.send_header("Content-Type", "text/event-stream")
        self.end_headers()
        time.sleep(GAP_S * body["max_tokens"])
        self.wfile.write(b"".join(b'data: {"choices": [{"text": "t"}]}\n\n' for dummy_token in range(body["max_tokens"])))
        self.wfile.write(b"data: [DONE]\n\n")


def test_a_burst_does_not_inflate_the_gated_rate(serve):
    out = subprocess.run([sys.executable, str(PROBE), str(serve(BurstyStream)), "8"], capture_output=True,
                         text=True, check=True, timeout=30)
    result = json.loads(out.stdout)
    assert result["tokens"] == 8
    assert result["tokens_per_second"] <= 1 / GAP_S


def _fake_systemctl(directory, units):
    """A systemctl on PATH that lists units {name: port} as active and shows their ExecStart."""
    script = directory / "systemctl"
    table = json.dumps(dict(("cpuinfer-llama-%s.service" % name, port) for name, port in units.items()))
    script.write_text("""#!%s
import json, sys
units = json.loads(%r)
if sys.argv[1] == "list-units":
    for unit in units:
        print("%%s loaded active running demo" %% unit)
else:
    print("{ path=/opt/engine/llama-server ; argv[]=/opt/engine/llama-server --model m.gguf --port %%d --threads 1 ; "
          "ignore_errors=no ; start_time=[n/a] }" %% units[sys.argv[-1]])
""" % (sys.executable, table))
    script.chmod(0o755)


def test_active_measures_every_running_instance_by_name(server, tmp_path):
    _fake_systemctl(tmp_path, {"tiny": server, "other": server})
    env = {"PATH": "%s:/usr/bin:/bin" % tmp_path, "LLAMA_SERVER_API_KEY": "from-env"}
    out = subprocess.run([sys.executable, str(PROBE), "--active", "3", "5"], capture_output=True, text=True,
                         check=True, timeout=60, env=env)
    result = json.loads(out.stdout)
    assert sorted(result) == ["other", "tiny"] and result["tiny"]["tokens"] == 3
    assert FakeStream.seen_auth[-1] == "Bearer from-env"


class ColdStartStream(FakeStream):
    """A server whose first completion after its start is ten times slower than the ones after it."""
    bodies = []

    def gap_s(self, body):
        cold = not ColdStartStream.bodies
        ColdStartStream.bodies.append(body)
        return GAP_S * (10 if cold else 1)


def test_active_measures_an_instance_after_its_first_completion(serve, tmp_path):
    ColdStartStream.bodies = []
    _fake_systemctl(tmp_path, {"restarted": serve(ColdStartStream)})
    out = subprocess.run([sys.executable, str(PROBE), "--active", "6", "5"], capture_output=True, text=True,
                         check=True, timeout=60, env={"PATH": "%s:/usr/bin:/bin" % tmp_path})
    result = json.loads(out.stdout)["restarted"]
    # the short warm-up first, unmeasured; the measured completion has the gate's length and prompt
    assert [body["max_tokens"] for body in ColdStartStream.bodies] == [4, 6]
    assert ColdStartStream.bodies[0]["prompt"] == ColdStartStream.bodies[1]["prompt"]
    # measured warm: its gaps are the server's steady pacing, not the first completion's ten times it
    assert result["tokens"] == 6 and max(result["gaps_ms"]) < GAP_S * 1000 * 5


def test_active_with_nothing_running_is_empty(tmp_path):
    _fake_systemctl(tmp_path, {})
    out = subprocess.run([sys.executable, str(PROBE), "--active", "3", "1"], capture_output=True, text=True,
                         check=True, timeout=60, env={"PATH": "%s:/usr/bin:/bin" % tmp_path})
    assert json.loads(out.stdout) == {}


def test_an_instance_that_never_answers_fails_after_the_wait(tmp_path):
    _fake_systemctl(tmp_path, {"gone": 9})  # nothing listens on port 9
    started = time.monotonic()
    out = subprocess.run([sys.executable, str(PROBE), "--active", "3", "1.5"], capture_output=True, text=True,
                         check=False, timeout=60, env={"PATH": "%s:/usr/bin:/bin" % tmp_path})
    assert out.returncode != 0 and "Connection refused" in out.stderr
    assert time.monotonic() - started >= 1.5


def test_the_key_comes_from_the_instance_files_first(tmp_path):
    sys.path.insert(0, str(PROBE.parent))
    try:
        import stream_probe
    finally:
        sys.path.remove(str(PROBE.parent))
    (tmp_path / "a.key").write_text("key-file\n")
    (tmp_path / "b.env").write_text("# managed\nAPI_KEY=env-file\n")
    assert stream_probe.api_key_of("a", str(tmp_path)) == "key-file"
    assert stream_probe.api_key_of("b", str(tmp_path)) == "env-file"
    assert stream_probe.port_of("{ argv[]=/x --port 8081 --threads 2 ; }") == 8081
    assert stream_probe.port_of("{ argv[]=/x --threads 2 ; }") is None


def test_one_token_has_no_gap_the_probe_reports_as_zero(server):
    out = subprocess.run([sys.executable, str(PROBE), str(server), "1", "secret"], capture_output=True, text=True,
                         check=True, timeout=30)
    result = json.loads(out.stdout)
    assert result["tokens"] == 1 and result["gaps_ms"] == []
    assert result["p50_ms"] == 0.0 and result["p99_ms"] == 0.0


def test_the_percentile_is_nearest_rank_and_none_without_values():
    sys.path.insert(0, str(PROBE.parent.parent))
    from cpuinfer_agent.stream_probe import percentile  # pylint: disable=import-outside-toplevel
    values = list(range(1, 101))
    assert percentile(values, 0.5) == 51 and percentile(values, 0.99) == 99 and percentile(values, 0.0) == 1
    assert percentile([7], 0.99) == 7
    assert percentile([], 0.99) is None
