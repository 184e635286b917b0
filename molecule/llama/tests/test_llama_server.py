"""The instances as a client and an operator see them."""

import json
import os
import time

import openai
import pytest

INSTANCES = {"tiny-llama": 8081, "tiny-deepseek": 8082}
API_KEY = "lab-secret"


def _unit(name):
    return "cpuinfer-llama-%s.service" % name


def _cgroup(host, name):
    group = host.check_output("systemctl show --property=ControlGroup --value %s" % _unit(name))
    return "/sys/fs/cgroup" + group


def _forwarded_port(host, guest_port):
    """The controller's 127.0.0.1 port that the lab forwards to guest_port of this VM."""
    state = os.environ.get("CPUINFER_LAB_STATE", "/var/lib/cpuinfer-lab")
    name = host.check_output("hostname")
    with open(os.path.join(state, "vms", name, "vm.json"), encoding="utf-8") as handle:
        return json.load(handle)["forwarded"][str(guest_port)]


@pytest.mark.parametrize("name", sorted(INSTANCES))
def test_unit_active_in_the_inference_slice(host, name):
    assert host.service(_unit(name)).is_running
    assert "/cpuinfer-inference.slice/" in _cgroup(host, name)


@pytest.mark.parametrize("name,filename,expected", [
    ("tiny-llama", "memory.max", str(512 << 20)),
    ("tiny-llama", "memory.high", str(384 << 20)),
    ("tiny-llama", "memory.low", str(64 << 20)),
    ("tiny-llama", "cpu.weight", "200"),
    ("tiny-llama", "cpu.max", "max 100000"),
    ("tiny-llama", "cpuset.cpus", "0"),
    ("tiny-llama", "io.weight", "default 200"),
    ("tiny-deepseek", "cpu.max", "80000 100000"),
    ("tiny-deepseek", "memory.max", str(512 << 20)),
    ("tiny-deepseek", "cpu.weight", "100"),
])
def test_cgroup_files_match_the_variables(host, name, filename, expected):
    assert host.file("%s/%s" % (_cgroup(host, name), filename)).content_string.strip() == expected


@pytest.mark.parametrize("name", sorted(INSTANCES))
def test_threads_equal_the_cores_of_allowed_cpus(host, name):
    pid = host.check_output("systemctl show --property=MainPID --value %s" % _unit(name))
    argv = host.file("/proc/%s/cmdline" % pid).content_string.split("\0")
    cores = len(host.file("%s/cpuset.cpus.effective" % _cgroup(host, name)).content_string.strip().split(","))
    assert argv[argv.index("--n_threads") + 1] == str(cores) == "1"
    assert argv[argv.index("--n_threads_batch") + 1] == str(cores)


@pytest.mark.parametrize("name", sorted(INSTANCES))
def test_models_are_shared_read_only_files(host, name):
    pid = host.check_output("systemctl show --property=MainPID --value %s" % _unit(name))
    with host.sudo():
        maps = host.file("/proc/%s/maps" % pid).content_string
    mapped = {line.split()[-1] for line in maps.splitlines() if line.endswith(".gguf")}
    assert len(mapped) == 1, "the model is mmapped, not copied"
    model = host.file(mapped.pop())
    assert model.mode == 0o444 and model.user == "root"


@pytest.mark.parametrize("name", sorted(INSTANCES))
def test_openai_client_chat_and_stream(host, name):
    client = openai.OpenAI(base_url="http://127.0.0.1:%d/v1" % _forwarded_port(host, INSTANCES[name]),
                           api_key=API_KEY, timeout=120, max_retries=2)
    reply = client.chat.completions.create(model=name, messages=[{"role": "user", "content": "Hello"}], max_tokens=8)
    assert reply.choices[0].message.content is not None
    assert reply.usage.completion_tokens >= 1
    stream = client.chat.completions.create(model=name, messages=[{"role": "user", "content": "Hi"}],
                                            max_tokens=8, stream=True)
    chunks = list(stream)
    assert len(chunks) >= 2
    with pytest.raises(openai.AuthenticationError):
        openai.OpenAI(base_url=client.base_url, api_key="wrong", max_retries=0).models.list()


def test_security_exposure_is_recorded_and_within_bounds(host):
    with host.sudo():
        exposure = json.loads(host.file("/var/lib/cpuinfer/llama_server_security.json").content_string)
    assert set(exposure) == set(INSTANCES)
    assert all(value <= 2.0 for value in exposure.values()), exposure
    print("systemd-analyze security exposure:", exposure)


def test_sigkill_brings_it_back_within_5s(host):
    unit = _unit("tiny-llama")
    old = host.check_output("systemctl show --property=MainPID --value %s" % unit)
    with host.sudo():
        host.check_output("systemctl kill --signal=KILL %s" % unit)
    started = time.monotonic()
    while time.monotonic() - started < 15:
        pid = host.check_output("systemctl show --property=MainPID --value %s" % unit)
        if host.run("systemctl is-active --quiet %s" % unit).rc == 0 and pid not in ("0", old):
            break
        time.sleep(0.2)
    elapsed = time.monotonic() - started
    print("active again after %.1fs" % elapsed)
    assert elapsed <= 5.0
