"""llama-tiny served by ik_llama.cpp's llama-server on each architecture, flash attention on, four slots."""

import os
import sys
import threading
import time

import openai
import pytest

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


def client_of(host):
    return openai.OpenAI(base_url="http://127.0.0.1:%d/v1" % host_port(host, 8081), api_key=API_KEY, timeout=300,
                         max_retries=0)


def test_the_server_runs_with_flash_attention_on(host):
    pid = host.check_output("systemctl show --property=MainPID --value %s" % UNIT)
    assert " --flash-attn on " in " %s " % host.check_output("tr '\\0' ' ' < /proc/%s/cmdline" % pid)


def test_our_flash_attention_check_passes_on_this_architectures_kernels(host):
    pid = host.check_output("systemctl show --property=MainPID --value %s" % UNIT)
    engine = os.path.dirname(host.check_output("readlink /proc/%s/exe" % pid))
    check = host.run("%s/cpuinfer-fa-check 2" % engine)
    assert check.rc == 0, check.stdout + check.stderr
    assert check.stdout.count("ok  ") == 7


def test_four_streamed_completions_at_once_through_the_openai_client(host):
    """Four slots decoding in one batch: the case the vendored flash attention aborted on."""
    client = client_of(host)
    texts, errors = [None] * 4, []

    def one(index):
        try:
            stream = client.completions.create(model="tiny-ik", prompt="Stream %d of the fork says" % index, max_tokens=12,
                                               stream=True, temperature=0, extra_body={"ignore_eos": True})
            texts[index] = [chunk.choices[0].text for chunk in stream if chunk.choices and chunk.choices[0].text]
        except openai.OpenAIError as exc:
            errors.append(exc)
    started = time.monotonic()
    workers = [threading.Thread(target=one, args=(index,)) for index in range(4)]
    for worker in workers:
        worker.start()
    for worker in workers:
        worker.join()
    assert not errors, errors
    assert all(pieces and len(pieces) >= 2 for pieces in texts), texts
    assert time.monotonic() - started < 300
    assert host.service(UNIT).is_running


def test_a_prompt_too_long_for_a_slot_or_with_an_id_beyond_the_vocabulary_is_refused_and_the_server_stays_up(host):
    client = client_of(host)
    with pytest.raises(openai.BadRequestError):
        client.completions.create(model="tiny-ik", prompt=[1 + index % 200 for index in range(400)], max_tokens=4)
    # llama-tiny has 512 tokens
    with pytest.raises(openai.BadRequestError, match="outside the model's vocabulary"):
        client.completions.create(model="tiny-ik", prompt=[1, 2, 99999], max_tokens=4)
    stream = client.completions.create(model="tiny-ik", prompt="Still here", max_tokens=4, stream=True,
                                       extra_body={"ignore_eos": True})
    assert [chunk for chunk in stream if chunk.choices and chunk.choices[0].text]
    assert host.service(UNIT).is_running
