"""llama-tiny served by ik_llama.cpp's llama-server on each architecture."""

import os
import sys
import time

import openai

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "shared"))

from lab_vm import host_port  # noqa: E402  pylint: disable=wrong-import-position

API_KEY = "lab-secret-not-for-production"
UNIT = "cpuinfer-llama-tiny-ik.service"


def test_the_unit_runs_the_forks_server_from_its_own_build(host):
    assert host.service(UNIT).is_running
    pid = host.check_output("systemctl show --property=MainPID --value %s" % UNIT)
    exe = host.check_output("readlink /proc/%s/exe" % pid)
    assert exe.startswith("/opt/cpuinfer/llama-server/builds/ik-0.1.5-") and exe.endswith("/engine/llama-server")
    assert "not found" not in host.check_output("ldd %s" % exe)


def test_a_streamed_completion_through_the_openai_client(host):
    client = openai.OpenAI(base_url="http://127.0.0.1:%d/v1" % host_port(host, 8081), api_key=API_KEY,
                           timeout=300, max_retries=1)
    started = time.monotonic()
    stream = client.completions.create(model="tiny-ik", prompt="The fork says", max_tokens=12, stream=True,
                                       temperature=0, extra_body={"ignore_eos": True})
    pieces = [chunk.choices[0].text for chunk in stream if chunk.choices and chunk.choices[0].text]
    assert len(pieces) >= 2 and "".join(pieces)
    assert time.monotonic() - started < 300
