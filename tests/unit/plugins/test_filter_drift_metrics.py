import subprocess
from pathlib import Path

import pytest
from prometheus_client.parser import text_string_to_metric_families

from ansible.errors import AnsibleFilterError

from ansible_collections.cpuinfer.llm.plugins.plugin_utils._filter_drift_metrics import drift_exposition

PROMTOOL = Path(__file__).resolve().parents[3] / ".build" / "tools" / "promtool"
REPORT = {
    "h2": [{"setting": "thp.enabled", "wanted": "madvise", "actual": "always", "in_sync": False},
           {"setting": "sysctl kernel.perf_event_paranoid", "wanted": "2", "actual": "2", "in_sync": True}],
    "h1": [{"setting": "thp.enabled", "wanted": "madvise", "actual": "madvise", "in_sync": True}],
    "unreached": [],
}


def samples(text):
    return {(s.name, tuple(sorted(s.labels.items()))): s.value
            for family in text_string_to_metric_families(text) for s in family.samples}


def test_drift_per_host_and_setting_and_when_verify_ran():
    found = samples(drift_exposition(REPORT, 1764658800.5))
    assert found[("cpuinfer_tuning_drift_settings", (("host", "h2"),))] == 1
    assert found[("cpuinfer_tuning_drift_settings", (("host", "h1"),))] == 0
    assert found[("cpuinfer_tuning_drift_settings", (("host", "unreached"),))] == 0
    assert found[("cpuinfer_tuning_setting_in_sync", (("host", "h2"), ("setting", "thp.enabled")))] == 0
    assert found[("cpuinfer_tuning_setting_in_sync", (("host", "h2"), ("setting", "sysctl kernel.perf_event_paranoid")))] == 1
    assert found[("cpuinfer_tuning_verify_timestamp_seconds", ())] == 1764658800.5


@pytest.mark.skipif(not PROMTOOL.exists(), reason="scripts/bootstrap unpacks promtool")
def test_promtool_accepts_it():
    check = subprocess.run([str(PROMTOOL), "check", "metrics"], input=drift_exposition(REPORT, 1.0),
                           capture_output=True, text=True, check=False)
    assert check.returncode == 0, check.stdout + check.stderr


@pytest.mark.parametrize("report", [["h1"], {"h1": [{"setting": "x"}]}, {"h1": ["x"]}])
def test_a_report_of_another_shape_is_refused(report):
    with pytest.raises(AnsibleFilterError):
        drift_exposition(report, 1.0)
