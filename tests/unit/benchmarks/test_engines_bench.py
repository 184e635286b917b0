"""benchmarks/run engines: the goals from bench and served rates, the storm's verdict, the perplexity tool's
estimate, the report. The served rates themselves are the host agent's (tests/unit/agent/test_served_rate.py)."""

import json
import math
import subprocess
import sys
import urllib.error
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[3]
sys.path[:0] = [str(ROOT / "benchmarks"), str(ROOT / "agent")]

import engines_bench  # noqa: E402
import engines_serving  # noqa: E402


def cell(median, top=None):
    top = top or median
    return {"median": median, "min": median, "max": top, "max_over_median": round(top / median, 2)}


def served(prefill, decode, prefill4, decode4, top=None):
    return {"argv": "--flash-attn on", "1": {"prefill": cell(prefill, top), "decode": cell(decode)},
            "4": {"prefill": cell(prefill4), "decode": cell(decode4)}}


def model_result(ik_prefill, top=None):
    return {"model": "m.gguf", "bytes": 3e8,
            "bench": {"llama-server": {"argv": "-fa 1", "prefill": 1000.0, "decode": 200.0},
                      "ik_llama.cpp": {"argv": "-fa 1", "prefill": 2000.0, "decode": 300.0}},
            "served": {"llama-server": served(900.0, 150.0, 950.0, 250.0),
                       "ik_llama.cpp": served(ik_prefill, 240.0, 1500.0, 260.0, top)},
            "checks": {"likelihood": {"flash_on": -9.1, "flash_off": -9.101, "relative_difference": 0.0001},
                       "storm": {"requests": 200, "too_long": 25, "too_long_statuses": ["400"], "out_of_vocabulary": 22,
                                 "out_of_vocabulary_statuses": ["400"], "fitting_statuses": ["200"],
                                 "fitting_ok": 153, "health_after": 200, "server_alive_after": True},
                       "second_turn": {"role flags": {"prompt": 340, "prefilled": 40}, "cells kept": {"prompt": 340, "prefilled": 40}}}}


def test_ik_must_keep_as_much_of_its_bench_as_mainline_and_beat_it_served():
    goal = engines_bench.goals(model_result(1800.0))
    # mainline keeps 0.9 of its bench prefill, ik 0.9 of its own: 1.0; decode 0.75 / 0.8 of each
    assert goal["served_of_bench"]["ik_llama.cpp"] == {"prefill": 0.9, "decode": 0.8}
    assert goal["ik_kept_vs_mainline"] == {"prefill": 1.0, "decode": 1.07}
    assert goal["ik_vs_mainline_1"] == {"prefill": 2.0, "decode": 1.6}
    assert goal["met"] == {"kept": True, "not_bimodal": True, "faster_1": True, "no_loss_4": True, "likelihood": True,
                           "storm": True}
    # a server that slows down as it serves keeps less of its bench and is bimodal
    slowed = engines_bench.goals(model_result(1000.0, top=1900.0))["met"]
    assert (slowed["kept"], slowed["not_bimodal"]) == (False, False)


def test_a_storm_with_a_dead_server_or_a_5xx_fails_its_goal():
    result = model_result(1800.0)
    result["checks"]["storm"].update(server_alive_after=False, health_after=None)
    assert engines_bench.goals(result)["met"]["storm"] is False
    result = model_result(1800.0)
    result["checks"]["storm"]["fitting_statuses"] = ["200", "500"]
    assert engines_bench.goals(result)["met"]["storm"] is False
    # an id the vocabulary lacks answered with anything but a refusal (a dropped connection: the server died)
    result = model_result(1800.0)
    result["checks"]["storm"]["out_of_vocabulary_statuses"] = ["400", "RemoteDisconnected"]
    assert engines_bench.goals(result)["met"]["storm"] is False


def test_the_report_states_flags_and_verdicts():
    result = model_result(1000.0, top=1900.0)
    result["goal"] = engines_bench.goals(result)
    data = {"environment": {"command": "benchmarks/run engines", "date": "d", "commit": "c", "controller_cpu": "EPYC",
                            "controller_cpus": 2},
            "builds": {"llama.cpp": "0.3.36-x", "ik_llama.cpp": "ik-0.1.5-x"}, "rounds": 3, "requests": 8, "cores": 2,
            "fa_check": {"returncode": 0, "lines": ["ok   Dk=64"]}, "models": {"deepseek2-lite-bench Q8_0": result}}
    text = engines_bench.markdown(data)
    assert "| ik_llama.cpp | 2000.0 | 300.0 | 1 | 1000.0 (1000.0-1900.0) | 240.0 (240.0-240.0) | 1.90 / 1.00 |" in text
    assert "(goal <= 1.3: NOT met)" in text and "ok   Dk=64" in text
    assert "llama-bench `-fa 1`, served `--flash-attn on`" in text
    assert "server process alive (met)" in text
    assert "prompt tokens prefilled role flags 40 of 340, cells kept 40 of 340" in text


def test_the_storm_sends_prompts_too_long_for_a_slot_or_with_unknown_ids_and_counts_each_answer(monkeypatch):
    slot = engines_serving.CTX_SIZE // engines_serving.SLOTS

    def answer(port, body, timeout):
        if len(body["prompt"]) >= slot:
            raise urllib.error.HTTPError("u", 400, "too long", {}, None)
        if engines_serving.OUT_OF_VOCABULARY in body["prompt"]:
            raise urllib.error.HTTPError("u", 400, "outside the vocabulary", {}, None)
        return 0.0, [0.1], 0.2
    monkeypatch.setattr(engines_serving.stream_probe, "token_arrivals", answer)
    monkeypatch.setattr(engines_serving, "health", lambda port: 200)
    result = engines_serving.storm(1, 16)
    assert (result["too_long"], result["too_long_statuses"], result["out_of_vocabulary"], result["out_of_vocabulary_statuses"],
            result["fitting_statuses"], result["fitting_ok"]) == (2, ["400"], 2, ["400"], ["200"], 12)


def test_a_second_turn_counts_what_the_server_prefilled_after_another_clients_request(monkeypatch):
    sent = []

    class Response:
        def __init__(self, prompt):
            self.prompt = prompt

        def __enter__(self):
            return self

        def __exit__(self, *exc):
            return False

        def read(self):
            # a server that keeps the first turn: a prompt extending it prefills only what was added
            first = sent[0]
            kept = len(first) if self.prompt[:len(first)] == first and self.prompt is not first else 0
            return json.dumps({"timings": {"prompt_n": len(self.prompt) - kept}}).encode()

    def urlopen(request, timeout):
        prompt = json.loads(request.data)["prompt"]
        sent.append(prompt)
        return Response(prompt)
    monkeypatch.setattr(engines_serving.urllib.request, "urlopen", urlopen)
    assert engines_serving.second_turn(1, turn=30, added=4) == {"prompt": 34, "prefilled": 4}
    assert len(sent) == 3 and sent[1] != sent[0] and sent[2][:30] == sent[0]


@pytest.mark.parametrize("line, value", [
    ("Final estimate: PPL = 12.5 +/- 0.3", 12.5),
    ("Final estimate: PPL over 16 chunks for n_ctx=128 = 33918.1530 +/- 771.65810", 33918.153),
])
def test_the_perplexity_tools_estimate_in_either_format(line, value):
    def run(argv, **kwargs):
        assert argv[argv.index("-fa") + 1] == "off"
        return subprocess.CompletedProcess(argv, 0, stdout="[1]3.1,\n" + line + "\n")
    got = engines_serving.mean_log_likelihood(Path("/b"), Path("/m/x.gguf"), "t.txt", 2, False, run)
    assert got == pytest.approx(-math.log(value))


def test_a_variants_name_value_entry_goes_into_the_servers_environment_not_its_flags(monkeypatch):
    seen = {}

    class Server:
        def __init__(self, argv, port, cwd):
            seen["argv"], seen["keep"] = argv, engines_bench.os.environ.get("CPUINFER_IK_SLOT_CELLS")

        def __enter__(self):
            return self

        def __exit__(self, *exc):
            return False
    monkeypatch.setattr(engines_bench.served_rate, "Server", Server)
    monkeypatch.setattr(engines_bench.served_rate, "completion", lambda *a: None)
    one, apart = {"prefill": 1.0, "decode": 1.0, "first_spread": 0.0}, {"prefill": 1.0, "decode": 0.5, "first_spread": 0.3}
    monkeypatch.setattr(engines_bench.served_rate, "served", lambda *a: {"1": [one], "4": [one, apart]})
    monkeypatch.setattr(engines_bench, "engine_flags", lambda engine: ["--flash-attn", "on"])
    cell = engines_bench.serve("ik_llama.cpp", Path("/b"), Path("/m/x.gguf"), 2, 1, 1, ["CPUINFER_IK_SLOT_CELLS=keep", "--parallel", "1"])
    # the group whose first tokens came 0.3 s apart is counted
    assert (cell["apart"], cell["groups"]) == ({"1": 0, "4": 1}, {"1": 1, "4": 2})
    assert seen["keep"] == "keep" and "CPUINFER_IK_SLOT_CELLS" not in engines_bench.os.environ
    assert "CPUINFER_IK_SLOT_CELLS=keep" not in seen["argv"] and seen["argv"][-4:] == ["--flash-attn", "on", "--parallel", "1"]
