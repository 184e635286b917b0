"""The front door on mol-fleet-1 in front of both hosts: its runtime API, a real client through it, the
load the rollout ran under, and an instance's own stop waiting for its requests."""

import concurrent.futures
import json
import os
import threading
import time

import openai
import pytest

API_KEY = "fleet-key-0123456789abcdef"
SERVERS = {"mol-fleet-1--tiny-llama-node0", "mol-fleet-2--tiny-llama-node0", "mol-fleet-2--tiny-llama-node1"}


def _forwarded(vm, guest_port):
    state = os.environ.get("CPUINFER_LAB_STATE", "/var/lib/cpuinfer-lab")
    with open(os.path.join(state, "vms", vm, "vm.json"), encoding="utf-8") as handle:
        return json.load(handle)["forwarded"][str(guest_port)]


def _frontdoor():
    return "http://127.0.0.1:%d/v1" % _forwarded("mol-fleet-1", 9081)


def _only(host, name):
    if host.backend.get_hostname() != name:
        pytest.skip(name)


def test_every_server_is_up_and_in_rotation_on_the_runtime_api(host):
    _only(host, "mol-fleet-1")
    with host.sudo():
        stat = host.check_output("echo 'show stat' | socat -t 5 stdio unix-connect:/run/haproxy/admin.sock")
        mode = host.check_output("stat -c %a:%U /run/haproxy/admin.sock")
    rows = [line.split(",") for line in stat.splitlines() if line and not line.startswith("#")]
    header = stat.splitlines()[0][2:].split(",")
    servers = {row[1]: dict(zip(header, row)) for row in rows if row[0] == "tiny-llama" and row[1] not in ("BACKEND",)}
    assert set(servers) == SERVERS
    assert {name: s["status"] for name, s in servers.items()} == {name: "UP" for name in SERVERS}
    # maxconn per server = the instance's parallel slots
    assert {s["slim"] for s in servers.values()} == {"1"}
    assert mode == "600:root"


def test_the_rollout_under_load_lost_no_request(host):
    _only(host, "mol-fleet-1")
    with open(os.path.join(os.environ["MOLECULE_EPHEMERAL_DIRECTORY"], "load.json"), encoding="utf-8") as handle:
        load = json.load(handle)
    summary = load["summary"]
    print("load through the front door during the rollout: %s" % summary)
    assert summary["failed"] == 0 and summary["truncated"] == 0 and summary["sent_rollout"] > 0
    assert summary["completed"] == summary["sent"]


def test_openai_client_through_the_front_door_chat_completions_and_a_wrong_key(host):
    _only(host, "mol-fleet-1")
    client = openai.OpenAI(base_url=_frontdoor(), api_key=API_KEY, timeout=300, max_retries=0)
    reply = client.chat.completions.create(model="tiny-llama", messages=[{"role": "user", "content": "Hello"}],
                                           max_tokens=8)
    assert reply.usage.completion_tokens >= 1
    chunks = list(client.completions.create(model="tiny-llama", prompt="Once", max_tokens=8, stream=True,
                                            extra_body={"ignore_eos": True}))
    assert chunks[-1].choices[0].finish_reason == "length"
    with pytest.raises(openai.AuthenticationError):
        openai.OpenAI(base_url=_frontdoor(), api_key="wrong-key", max_retries=0).completions.create(
            model="tiny-llama", prompt="Hi", max_tokens=1)


def _stream(index):
    client = openai.OpenAI(base_url=_frontdoor(), api_key=API_KEY, timeout=600, max_retries=0)
    finish = None
    for chunk in client.chat.completions.create(model="tiny-llama", messages=[{"role": "user", "content": "Stream %d" % index}],
                                                max_tokens=16, stream=True, extra_body={"ignore_eos": True}):
        if chunk.choices and chunk.choices[0].finish_reason:
            finish = chunk.choices[0].finish_reason
    return finish


def test_streams_beyond_the_slots_queue_at_the_front_door_and_all_complete(host):
    _only(host, "mol-fleet-1")
    # three servers of one slot each: six streams at once, three wait in HAProxy's queue
    queued = []

    def watch(stop):
        while not stop.is_set():
            with host.sudo():
                stat = host.check_output("echo 'show stat' | socat -t 5 stdio unix-connect:/run/haproxy/admin.sock")
            backend = [line.split(",") for line in stat.splitlines() if line.startswith("tiny-llama,BACKEND,")]
            queued.append(int(backend[0][2] or 0))
            time.sleep(0.5)

    stop = threading.Event()
    watcher = threading.Thread(target=watch, args=(stop,))
    watcher.start()
    try:
        with concurrent.futures.ThreadPoolExecutor(max_workers=6) as pool:
            finishes = list(pool.map(_stream, range(6)))
    finally:
        stop.set()
        watcher.join()
    assert finishes == ["length"] * 6
    assert max(queued) >= 1, queued


def test_haproxys_own_metrics_answer(host):
    _only(host, "mol-fleet-1")
    text = host.check_output("python3 -c \"import urllib.request; print(urllib.request.urlopen('http://127.0.0.1:8405/metrics').read().decode())\"")
    assert "haproxy_backend_current_queue{proxy=\"tiny-llama\"}" in text
    assert "haproxy_server_status{proxy=\"tiny-llama\",server=\"mol-fleet-2--tiny-llama-node1\"" in text


def test_a_stop_without_front_door_waits_for_the_stream_it_serves(host):
    _only(host, "mol-fleet-2")
    client = openai.OpenAI(base_url="http://127.0.0.1:%d/v1" % _forwarded("mol-fleet-2", 8082), api_key=API_KEY,
                           timeout=600, max_retries=0)
    finishes = []

    def stream():
        for chunk in client.completions.create(model="tiny-llama", prompt="A long answer:", max_tokens=96, stream=True,
                                               extra_body={"ignore_eos": True}):
            if chunk.choices and chunk.choices[0].finish_reason:
                finishes.append(chunk.choices[0].finish_reason)

    reader = threading.Thread(target=stream)
    reader.start()
    time.sleep(3)  # the stream runs
    with host.sudo():
        started = time.monotonic()
        host.check_output("systemctl restart cpuinfer-llama-tiny-llama-node1.service")
        waited = time.monotonic() - started
        log = host.check_output("journalctl -u cpuinfer-llama-tiny-llama-node1.service -n 30 --no-pager -o cat")
    reader.join()
    print("restart waited %.1f s for the stream" % waited)
    assert finishes == ["length"], finishes
    assert "no request in flight: stopping" in log
