"""scripts/test's units stage fails a run in which a test was skipped (scripts/pytest_no_skips.py)."""

import os
import subprocess
import sys
from pathlib import Path

SCRIPTS = Path(__file__).resolve().parents[2] / "scripts"


def run_pytest(tmp_path, body, *plugin):
    (tmp_path / "test_sample.py").write_text("import pytest\n\n\n" + body)
    return subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", *plugin, str(tmp_path)],
                          capture_output=True, text=True, check=False, cwd=tmp_path,
                          env=dict(os.environ, PYTHONPATH=str(SCRIPTS)))


SKIPPED = ('@pytest.mark.skipif(True, reason="promtool is missing")\ndef test_rules():\n    pass\n\n\n'
           'def test_other():\n    pytest.skip("no tool")\n')


def test_a_skip_fails_the_run_with_its_reason(tmp_path):
    result = run_pytest(tmp_path, SKIPPED, "-p", "pytest_no_skips")
    assert result.returncode == 1, result.stdout
    # a skipif skips at setup, which pytest then counts as an error; pytest.skip() in the body as a failure
    assert "1 failed, 1 error" in result.stdout and "where every test must run: Skipped: promtool is missing" in result.stdout, \
        result.stdout


def test_without_the_plugin_the_same_run_passes(tmp_path):
    assert run_pytest(tmp_path, SKIPPED).returncode == 0


def test_an_expected_failure_and_a_pass_are_left_alone(tmp_path):
    body = '@pytest.mark.xfail(reason="known")\ndef test_known():\n    assert False\n\n\ndef test_fine():\n    pass\n'
    result = run_pytest(tmp_path, body, "-p", "pytest_no_skips")
    assert result.returncode == 0, result.stdout
