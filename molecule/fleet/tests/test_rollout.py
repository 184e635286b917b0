"""After the rollout that regressed the canary: the canary went back to the release before and serves; the
host that rollout never reached still runs the release of the rollout under load before it, untouched. Both
run one instance per NUMA node of their inference CPUs from the same profile."""

import json
import shlex

import pytest

INSTANCES = {"mol-fleet-1": ["tiny-llama-node0"], "mol-fleet-2": ["tiny-llama-node0", "tiny-llama-node1"]}
RECORD = "/var/lib/cpuinfer/releases/llama_server.json"
# One non-streamed completion; llama-server reports its own decode rate in "timings".
COMPLETION = r"""
import json, os, urllib.request
KEY = "/etc/cpuinfer/llama-server/tiny-llama-node0.key"
key = open(KEY).read().strip() if os.path.exists(KEY) else ""
request = urllib.request.Request("http://127.0.0.1:8081/completion", data=json.dumps(
    {"prompt": "Once upon a time", "n_predict": 8, "temperature": 0}).encode(),
    headers=dict({"Content-Type": "application/json"}, **({"Authorization": "Bearer " + key} if key else {})))
print(json.dumps(json.load(urllib.request.urlopen(request, timeout=300))["timings"]))
"""


def _record(host):
    with host.sudo():
        return json.loads(host.file(RECORD).content_string)


def _quota_lines(unit_text):
    return [line for line in unit_text.splitlines() if line.startswith("CPUQuota=")]


def _units(host):
    return ["cpuinfer-llama-%s.service" % name for name in INSTANCES[host.backend.get_hostname()]]


def test_one_instance_per_node_of_the_inference_cpus(host):
    listed = host.check_output("systemctl list-units --plain --no-legend --type=service 'cpuinfer-llama-*'")
    assert sorted(line.split()[0] for line in listed.splitlines()) == _units(host)
    nodes = host.check_output("systemctl show --property=AllowedMemoryNodes --value %s" % " ".join(_units(host)))
    assert nodes.split() == [str(n) for n in range(len(_units(host)))]


def test_instances_on_two_nodes_pin_their_threads_under_numa(host):
    two_nodes = host.backend.get_hostname() == "mol-fleet-2"
    for unit in _units(host):
        command = host.check_output("systemctl show --property=ExecStart --value %s" % unit)
        assert ("--numa numactl" in command) is two_nodes, command
        invocation = host.check_output("systemctl show --property=InvocationID --value %s" % unit)
        with host.sudo():
            log = host.check_output("journalctl --no-pager -o cat _SYSTEMD_INVOCATION_ID=%s" % invocation)
        # llama.cpp pins each compute thread under --numa; the unit's system call filter must let it
        assert log and "pthread_setaffinity_np() failed" not in log


def test_every_host_runs_release_one_without_the_bad_quota(host):
    for unit in _units(host):
        assert host.service(unit).is_running
        assert host.check_output("systemctl show --property=CPUQuotaPerSecUSec --value %s" % unit) == "infinity"
        with host.sudo():
            assert not _quota_lines(host.file("/etc/systemd/system/" + unit).content_string)


def test_the_canary_went_back_and_serves_at_a_rate(host):
    if host.backend.get_hostname() != "mol-fleet-1":
        pytest.skip("the canary")
    record = _record(host)
    assert record["rolled_back_from"] is not None and record["previous"] is None
    with host.sudo():
        timings = json.loads(host.check_output("python3 -c %s" % shlex.quote(COMPLETION)))
    print("canary after the rollback: %.2f tokens/s decode" % timings["predicted_per_second"])
    assert timings["predicted_n"] == 8 and timings["predicted_per_second"] > 0.05


def test_the_host_the_bad_rollout_did_not_reach_kept_its_release_untouched(host):
    if host.backend.get_hostname() != "mol-fleet-2":
        pytest.skip("the host the bad rollout did not reach")
    record = _record(host)
    # site.yml's release, then the rollout under load's (CPUWeight 90); the bad one never came, no rollback
    assert record["previous"] is not None and record["rolled_back_from"] is None
    units = {path: state["content"] for path, state in record["current"].items() if path.endswith(".service")}
    assert units and all("CPUWeight=90" in content and not _quota_lines(content) for content in units.values())
