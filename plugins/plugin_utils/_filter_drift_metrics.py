# -*- coding: utf-8 -*-
# Copyright: cpuinfer.llm contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""verify.yml's drift report as Prometheus text, for the textfile collector of the machine that runs
verify (an AWX node, a bastion): the CpuinferTuningDrift alert reads it.

The code of the drift_metrics filters (plugins/filter/drift_metrics.py names them)."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

from ansible.errors import AnsibleFilterError

try:
    from prometheus_client import CollectorRegistry, Gauge, generate_latest
except ImportError:  # the controller's requirements bring it; the filter says so when it is missing
    CollectorRegistry = None


def drift_exposition(report, timestamp):
    """{host: [{setting, in_sync, ...}]} and the run's Unix time -> exposition text: per host the count
    of settings out of sync and each setting's 1/0, and when verify last ran."""
    if CollectorRegistry is None:
        raise AnsibleFilterError("drift_exposition needs the prometheus_client package on the controller")
    if not isinstance(report, dict):
        raise AnsibleFilterError("drift_exposition: the report is {host: [rows]}, not %r" % (report,))
    registry = CollectorRegistry()
    drifted = Gauge("cpuinfer_tuning_drift_settings", "Tuned settings that differ from what host_tuning wants, "
                    "at the last verify.yml run", ["host"], registry=registry)
    in_sync = Gauge("cpuinfer_tuning_setting_in_sync", "1 when the setting is as host_tuning wants it, at the last "
                    "verify.yml run", ["host", "setting"], registry=registry)
    last_run = Gauge("cpuinfer_tuning_verify_timestamp_seconds", "When verify.yml last wrote this file",
                     registry=registry)
    for host in sorted(report):
        rows = report[host] or []
        if not all(isinstance(row, dict) and "setting" in row and "in_sync" in row for row in rows):
            raise AnsibleFilterError("drift_exposition: each row of %s needs setting and in_sync" % host)
        drifted.labels(host=host).set(sum(1 for row in rows if not row["in_sync"]))
        for row in rows:
            in_sync.labels(host=host, setting=row["setting"]).set(1 if row["in_sync"] else 0)
    last_run.set(float(timestamp))
    return generate_latest(registry).decode("utf-8")
