"""llama_server's end-of-converge check: stopped units named first, else readiness, exposure and its record."""

import http.server
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

AGENT = Path(__file__).resolve().parents[3] / "agent"


class Health(http.server.BaseHTTPRequestHandler):
    def do_GET(self):  # noqa: N802 (http.server's name)
        self.send_response(200)
        self.end_headers()
        self.wfile.write(b"{}")

    def log_message(self, *args):
        pass


@pytest.fixture
def server(serve):
    return serve(Health)


def fake_systemd(tmp_path, unit_file_state="enabled", active_state="active", exposure="1.4"):
    """systemctl and systemd-analyze that answer as a unit in the given states would; calls are logged."""
    log = tmp_path / "calls"
    (tmp_path / "systemctl").write_text(
        "#!/bin/sh\necho \"systemctl $*\" >> %s\n"
        "echo UnitFileState=%s; echo ActiveState=%s; echo NRestarts=0\n" % (log, unit_file_state, active_state))
    (tmp_path / "systemd-analyze").write_text(
        "#!/bin/sh\necho \"systemd-analyze $*\" >> %s\n"
        "echo '  NAME  DESCRIPTION  EXPOSURE'\necho '-> Overall exposure level for $4: %s OK :-)'\n" % (log, exposure))
    (tmp_path / "journalctl").write_text("#!/bin/sh\necho 'log line'\n")
    for name in ("systemctl", "systemd-analyze", "journalctl"):
        (tmp_path / name).chmod(0o755)
    # the agent and the collection's helpers it imports, as the test process finds them
    return dict(os.environ, PATH="%s:%s" % (tmp_path, os.environ["PATH"]),
                PYTHONPATH=os.pathsep.join([str(AGENT)] + sys.path))


def run(env, record, *instances, timeout="30"):
    return subprocess.run([sys.executable, "-m", "cpuinfer_agent.ready_report", str(record), timeout, *instances],
                          env=env, capture_output=True, text=True, timeout=60, check=False)


def test_running_units_are_waited_for_measured_and_recorded_once(tmp_path, server):
    env, record = fake_systemd(tmp_path), tmp_path / "security.json"
    first = run(env, record, "tiny:%d:llama-server" % server)
    assert first.returncode == 0, first.stderr
    assert json.loads(first.stdout) == {"stopped": [], "exposure": {"tiny": 1.4}, "record_changed": True}
    assert json.loads(record.read_text()) == {"tiny": 1.4}
    assert oct(record.stat().st_mode & 0o777) == "0o640"
    again = run(env, record, "tiny:%d:llama-server" % server)
    assert json.loads(again.stdout)["record_changed"] is False
    assert "security --no-pager cpuinfer-llama-tiny.service" in (tmp_path / "calls").read_text()


def test_a_changed_exposure_rewrites_the_record(tmp_path, server):
    record = tmp_path / "security.json"
    record.write_text(json.dumps({"tiny": 1.4}, indent=4, sort_keys=True) + "\n")
    result = run(fake_systemd(tmp_path, exposure="1.9"), record, "tiny:%d:llama-server" % server)
    assert json.loads(result.stdout)["record_changed"] is True
    assert json.loads(record.read_text()) == {"tiny": 1.9}


@pytest.mark.parametrize("unit_file_state,active_state", [("disabled", "active"), ("enabled", "inactive"),
                                                          ("enabled", "failed")])
def test_a_unit_not_enabled_or_not_running_is_named_and_nothing_else_done(tmp_path, unit_file_state, active_state):
    env, record = fake_systemd(tmp_path, unit_file_state, active_state), tmp_path / "security.json"
    result = run(env, record, "a:1:llama-server", "b-2:2:llama-cpp-python")
    assert result.returncode == 0, result.stderr
    assert json.loads(result.stdout) == {"stopped": ["a", "b-2"], "exposure": {}, "record_changed": False}
    assert not record.exists()
    assert "systemd-analyze" not in (tmp_path / "calls").read_text()


def test_an_instance_that_never_answers_fails_with_its_log(tmp_path):
    # (enabled and failed counts as stopped, above); a unit that runs but never answers times out
    env = fake_systemd(tmp_path, active_state="activating")
    with http.server.HTTPServer(("127.0.0.1", 0), Health) as unused:
        port = unused.server_address[1]
    result = run(env, tmp_path / "security.json", "tiny:%d:llama-server" % port, timeout="0")
    assert result.returncode == 1
    assert "did not answer" in result.stderr and "log line" in result.stderr
    assert not (tmp_path / "security.json").exists()


def test_both_llama_cpp_servers_are_ready_by_health_the_python_server_by_a_completion():
    from cpuinfer_agent import ready_report  # pylint: disable=import-outside-toplevel

    assert ready_report.parse_instances(["a:1:llama-server", "b-2:2:ik_llama.cpp", "c:3:llama-cpp-python"]) == [
        ("a", 1, "health"), ("b-2", 2, "health"), ("c", 3, "completion")]
