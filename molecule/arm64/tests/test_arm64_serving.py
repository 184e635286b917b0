"""llama-tiny on the arm64 host, from an engine cross-compiled on the x86_64 controller."""

import os
import sys
import time

import openai

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "shared"))

from lab_vm import host_port  # noqa: E402  pylint: disable=wrong-import-position

API_KEY = "lab-secret-not-for-production"
UNIT = "cpuinfer-llama-tiny-llama.service"


def _main_pid(host):
    return host.check_output("systemctl show --property=MainPID --value %s" % UNIT)


def test_the_service_runs_the_aarch64_llama_server(host):
    assert host.service(UNIT).is_running
    exe = host.check_output("readlink /proc/%s/exe" % _main_pid(host))
    assert os.path.basename(exe) == "llama-server"
    # ELF header: class 64-bit, machine 0xb7 (EM_AARCH64) at offset 18, little endian
    header = host.check_output("od -An -tx1 -N20 %s" % exe).split()
    assert header[:4] == ["7f", "45", "4c", "46"] and header[18:20] == ["b7", "00"]


def test_the_engine_loads_only_the_hosts_libraries(host):
    exe = host.check_output("readlink /proc/%s/exe" % _main_pid(host))
    libraries = host.check_output("ldd %s" % exe)
    assert "not found" not in libraries
    assert "libggml-cpu.so" in libraries and os.path.dirname(exe) in libraries  # its own, found by $ORIGIN


def test_a_streamed_completion_through_the_openai_client(host):
    client = openai.OpenAI(base_url="http://127.0.0.1:%d/v1" % host_port(host, 8081), api_key=API_KEY,
                           timeout=300, max_retries=1)
    started = time.monotonic()
    stream = client.completions.create(model="tiny-llama", prompt="The Kunpeng host says", max_tokens=12,
                                       stream=True, temperature=0, extra_body={"ignore_eos": True})
    pieces = [chunk.choices[0].text for chunk in stream if chunk.choices and chunk.choices[0].text]
    assert len(pieces) >= 2  # streamed as several chunks, not one body
    assert "".join(pieces)
    assert time.monotonic() - started < 300


def test_a_wrong_key_is_refused(host):
    client = openai.OpenAI(base_url="http://127.0.0.1:%d/v1" % host_port(host, 8081), api_key="wrong",
                           timeout=60, max_retries=0)
    try:
        client.completions.create(model="tiny-llama", prompt="x", max_tokens=1)
    except openai.AuthenticationError:
        return
    raise AssertionError("a completion with a wrong API key was served")
