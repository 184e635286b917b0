"""llama_server's unit template per engine: each engine's own flags, its own build, the calibrated threads."""

from pathlib import Path

import pytest
import yaml
from ansible.parsing.dataloader import DataLoader
from ansible.template import Templar, trust_as_template

ROLE = Path(__file__).resolve().parents[3] / "roles" / "llama_server"
TEMPLATE = ROLE / "templates" / "llama-server.service.j2"
ENGINE_FLAGS = yaml.safe_load((ROLE / "vars" / "main.yml").read_text())["__llama_server_engine_flags"]
INSTANCE = {"name": "x", "best_effort": False, "threads": 3, "threads_batch": 4, "parallel": 2, "n_ctx": 256,
            "ctx_total": 512, "n_batch": 0, "n_ubatch": 512, "cache_type_k": "f16", "cache_type_v": "f16",
            "cache_ram_mib": 6, "load_mode": "mlock", "numa": "numactl", "chat_template": "", "embeddings": False, "extra_args": [],
            "model_sha256": "a" * 64, "port": 8081, "numa_first_touch": False, "cpu_weight": 100, "cpu_quota": 0,
            "memory_min": "", "memory_low": "", "memory_high": "1G", "memory_max": "2G", "allowed_cpus": "1-3",
            "allowed_memory_nodes": "", "numa_policy": "", "io_weight": 0, "sched_policy": "", "sched_priority": 0,
            "profiling": False, "settings_from": {"engine": "given", "threads": "calibration"}}
VARIABLES = {"ansible_managed": "managed", "__llama_server_besteffort_slice": "be.slice", "__llama_server_slice": "inf.slice",
             "llama_server_user": "u", "llama_server_api_key": "", "llama_server_model_dir": "/m",
             "__llama_server_build_dirs": {"ik_llama.cpp": "/opt/b/ik-key", "llama.cpp": "/opt/b/key"},
             "llama_server_bind_address": "127.0.0.1", "host_agent_current_bin": "/a/bin", "llama_server_stop_wait": 120,
             "llama_server_allowed_clients": [], "__llama_server_engine_flags": ENGINE_FLAGS}


def render(**instance):
    variables = dict(VARIABLES, instance=dict(INSTANCE, **instance))
    return Templar(loader=DataLoader(), variables=variables).template(trust_as_template(TEMPLATE.read_text()))


def exec_start(unit):
    lines = unit.split("ExecStart=", 1)[1].split("\n\n", 1)[0]
    return " ".join(lines.replace("\\\n", " ").split())


def test_the_fork_runs_its_own_build_with_its_own_flags():
    command = exec_start(render(engine="ik_llama.cpp", source="ik_llama.cpp", http_server=True, numa_first_touch=True,
                                extra_args=["-rtr"]))
    assert command.startswith("/opt/b/ik-key/engine/llama-server ")
    assert "--threads 3 --threads-batch 4" in command and "--ubatch-size 512" in command
    assert " --mlock " in command and "--load-mode" not in command and " --cache-ram 6 " in command
    # flash attention on (our fix of its kernels), before the instance's own flags, which may turn it off
    assert command.endswith("--flash-attn on -rtr --metrics --webui none")
    off = exec_start(render(engine="ik_llama.cpp", source="ik_llama.cpp", http_server=True, extra_args=["--flash-attn", "off"]))
    assert off.endswith("--flash-attn on --flash-attn off --metrics --webui none")


def test_mainline_keeps_its_flags():
    unit = render(engine="llama-server", source="llama.cpp", http_server=True)
    command = exec_start(unit)
    assert command.startswith("/opt/b/key/engine/llama-server ")
    assert "--load-mode mmap+mlock" in command and command.endswith("--metrics --no-webui")
    # the prompt cache in RAM bounded as the memory limits count it (the engine's own default is 8 GiB)
    assert "--cache-type-v f16 --cache-ram 6 " in command
    assert "flash-attn" not in command and "ExecStartPre" not in unit


@pytest.mark.parametrize("first_touch", [True, False])
def test_a_clean_first_touch_is_opt_in(first_touch):
    unit = render(engine="llama-server", source="llama.cpp", http_server=True, numa_first_touch=first_touch)
    assert ("ExecStartPre=+/a/bin/cpuinfer-evict-page-cache /m/%s.gguf" % ("a" * 64) in unit) is first_touch


@pytest.mark.parametrize("numa", ["numactl", "distribute", ""])
def test_only_numa_instances_may_pin_their_threads(numa):
    filters = [line for line in render(engine="llama-server", source="llama.cpp", http_server=True, numa=numa)
               .splitlines() if line.startswith("SystemCallFilter=")]
    # the deny line keeps @resources out; the allow line after it takes sched_setaffinity back
    assert filters[:2] == ["SystemCallFilter=@system-service", "SystemCallFilter=~@privileged @resources"]
    assert filters[2:] == (["SystemCallFilter=sched_setaffinity"] if numa else [])
