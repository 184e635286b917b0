"""benchmarks/run engines: the streamed trial's rates, the goal against mainline's default, the report."""

import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[3]
sys.path.insert(0, str(ROOT / "benchmarks"))

import engines_bench  # noqa: E402


def rates(prefill, decode):
    return {"1": {"prefill": {"median": prefill, "min": prefill, "max": prefill, "runs": [prefill]},
                  "decode": {"median": decode, "min": decode, "max": decode, "runs": [decode]}}}


def test_a_trial_times_prefill_to_the_last_first_token_and_decode_from_the_first_first_token(monkeypatch):
    arrivals = {0: (0.0, [2.0, 2.5, 3.0], 3.0), 1: (0.0, [4.0, 4.5], 5.0)}
    monkeypatch.setattr(engines_bench.stream_probe, "token_arrivals",
                        lambda port, body, timeout: arrivals[body["prompt"][0] % 2] if port == 18099 else None)
    monkeypatch.setattr(engines_bench, "prompt_ids", lambda stream, trial: [stream] * 512)
    result = engines_bench.trial(18099, 2, 0)
    assert result == {"prefill": round(2 * 512 / 4.0, 2), "decode": round(3 / (5.0 - 2.0), 2), "tokens": [3, 2]}


def test_prompts_differ_per_stream_and_trial_and_repeat_per_run():
    assert engines_bench.prompt_ids(0, 1) == engines_bench.prompt_ids(0, 1)
    assert engines_bench.prompt_ids(0, 1) != engines_bench.prompt_ids(1, 1) != engines_bench.prompt_ids(1, 2)
    assert len(engines_bench.prompt_ids(3, 3)) == 512 and min(engines_bench.prompt_ids(3, 3)) >= 300


def model_result(ik_prefill, ik_decode):
    return {"model": "m.gguf", "bytes": 3e8, "bytes_per_token": 7e7, "decode_bound_tokens_per_second": 100.0,
            "calibration": {"results": [{}] * 4, "best": {"engine": "ik_llama.cpp", "threads": 2, "threads_batch": 2,
                                                          "n_ubatch": 512, "decode_tokens_per_second": 20.0,
                                                          "prompt_tokens_per_second": 300.0}},
            "settings": {e: {c: {"threads": 2, "threads_batch": 2, "n_ubatch": 512} for c in ("default", "calibrated")}
                         for e in ("llama-server", "ik_llama.cpp")},
            "serving": {"llama-server": {"default": rates(100.0, 10.0), "calibrated": rates(110.0, 10.5)},
                        "ik_llama.cpp": {"default": rates(150.0, 11.0), "calibrated": rates(ik_prefill, ik_decode)}}}


def test_the_goal_is_the_calibrated_best_against_mainlines_default():
    goal = engines_bench.goals(model_result(200.0, 12.0), 100.0)
    assert (goal["prefill_ratio"], goal["decode_ratio"], goal["calibrated_engine"]) == (2.0, 1.2, "ik_llama.cpp")
    assert goal["best_decode_of_bound"] == 0.12 and goal["machine_is"].startswith("compute-bound")
    assert engines_bench.goals(model_result(200.0, 70.0), 100.0)["machine_is"] == "bandwidth-bound"


def test_the_report_says_whether_each_goal_was_met():
    result = model_result(140.0, 12.0)
    result["goal"] = engines_bench.goals(result, 100.0)
    data = {"environment": {"command": "benchmarks/run engines", "date": "d", "commit": "c", "controller_cpu": "EPYC",
                            "controller_cpus": 2},
            "builds": {"llama.cpp": "0.3.36-x", "ik_llama.cpp": "ik-0.1.5-x"}, "rounds": 3,
            "bandwidth": {"processes": 2, "bytes_per_second": 2e10}, "models": {"deepseek2-lite-bench Q8_0": result}}
    text = engines_bench.markdown(data)
    assert "prefill 1.40x (goal >= 1.5x: NOT met), decode 1.20x (goal >= 1.1x: met)" in text
    assert "| ik_llama.cpp | calibrated (-t 2 -tb 2 -ub 512) | 1 | 140.0 (140.0-140.0) | 12.0 (12.0-12.0) | 0.12 |" in text
