"""llama_server's readiness wait: ready on an answer, early failure on a crash loop or a failed unit."""

import http.server
import os
import subprocess
import sys
from pathlib import Path

import pytest

WAIT = Path(__file__).resolve().parents[3] / "agent" / "cpuinfer_agent" / "wait_ready.py"


class Completion(http.server.BaseHTTPRequestHandler):
    def do_POST(self):  # noqa: N802 (http.server's name)
        self.rfile.read(int(self.headers["Content-Length"]))
        self.send_response(200 if self.headers.get("Authorization") == "Bearer k" else 401)
        self.end_headers()
        self.wfile.write(b"{}")

    def log_message(self, *args):
        pass


def fake_systemd(tmp_path, active_state, restarts_per_call):
    """systemctl whose NRestarts grows on every call, as under Restart=always with a broken model."""
    counter = tmp_path / "calls"
    counter.write_text("0")
    (tmp_path / "systemctl").write_text(
        "#!/bin/sh\nn=$(cat %s); echo $((n + 1)) > %s\n"
        "echo NRestarts=$((n * %d)); echo ActiveState=%s; echo SubState=auto-restart\n"
        % (counter, counter, restarts_per_call, active_state))
    (tmp_path / "journalctl").write_text("#!/bin/sh\necho 'llama_model_load: error loading model'\n")
    for name in ("systemctl", "journalctl"):
        (tmp_path / name).chmod(0o755)
    return dict(os.environ, PATH="%s:%s" % (tmp_path, os.environ["PATH"]), LLAMA_SERVER_API_KEY="k")


def run(env, port, timeout="60"):
    return subprocess.run([sys.executable, str(WAIT), "cpuinfer-llama-x.service", str(port), timeout], env=env,
                          capture_output=True, text=True, timeout=60, check=False)


@pytest.fixture
def server(serve):
    return serve(Completion)


def free_port():
    httpd = http.server.HTTPServer(("127.0.0.1", 0), Completion)
    port = httpd.server_address[1]
    httpd.server_close()
    return port


def test_ready_when_the_completion_answers(tmp_path, server):
    assert run(fake_systemd(tmp_path, "active", 0), server).returncode == 0


def test_crash_loop_fails_early_with_the_log(tmp_path):
    result = run(fake_systemd(tmp_path, "activating", 2), free_port())
    assert result.returncode == 1
    assert "crash loop" in result.stderr
    assert "error loading model" in result.stderr


def test_failed_unit_fails_at_once(tmp_path):
    result = run(fake_systemd(tmp_path, "failed", 0), free_port())
    assert result.returncode == 1
    assert "has failed" in result.stderr


def test_timeout(tmp_path):
    result = run(fake_systemd(tmp_path, "activating", 0), free_port(), timeout="0")
    assert result.returncode == 1
    assert "did not answer" in result.stderr


class Health(http.server.BaseHTTPRequestHandler):
    """llama-server's /health: 503 while the model loads (the first calls), then 200."""

    calls = 0

    def do_GET(self):  # noqa: N802 (http.server's name)
        Health.calls += 1
        self.send_response(200 if self.path == "/health" and Health.calls > 2 else 503)
        self.end_headers()
        self.wfile.write(b'{"status": "ok"}')

    def log_message(self, *args):
        pass


def test_health_mode_waits_through_503_while_loading(tmp_path, serve):
    result = subprocess.run([sys.executable, str(WAIT), "cpuinfer-llama-x.service", str(serve(Health)), "60", "health"],
                            env=fake_systemd(tmp_path, "active", 0), capture_output=True, text=True, timeout=60,
                            check=False)
    assert result.returncode == 0, result.stderr
    assert Health.calls == 3


def test_health_mode_is_not_satisfied_by_a_completion_server(tmp_path, server):
    result = subprocess.run([sys.executable, str(WAIT), "cpuinfer-llama-x.service", str(server), "0", "health"],
                            env=fake_systemd(tmp_path, "activating", 0), capture_output=True, text=True, timeout=60,
                            check=False)
    assert result.returncode == 1 and "did not answer" in result.stderr


def test_port_and_probe_come_from_the_units_command_line():
    sys.path.insert(0, str(WAIT.parent))
    try:
        import wait_ready
    finally:
        sys.path.remove(str(WAIT.parent))
    llama = ("{ path=/opt/cpuinfer/llama-server/b/engine/llama-server ; argv[]=/opt/cpuinfer/llama-server/b/engine/llama-server "
             "--model /m.gguf --alias tiny --host 0.0.0.0 --port 8081 --threads 1 ; ignore_errors=no }")
    assert wait_ready.port_and_probe_of(llama) == (8081, "health")
    python = "{ path=/v/bin/python ; argv[]=/v/bin/python -m llama_cpp.server --model /m.gguf --port 8090 ; }"
    assert wait_ready.port_and_probe_of(python) == (8090, "completion")
    with pytest.raises(ValueError, match="no --port"):
        wait_ready.port_and_probe_of("{ path=/bin/true ; argv[]=/bin/true ; }")
