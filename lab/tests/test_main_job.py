"""The check of the main command's output (cpuinfer_lab.main_job), on output shaped as lab-up prints it."""

import pytest

from cpuinfer_lab import main_job

HOSTS = {"lab-xeon-1": "amd64", "lab-kunpeng-1": "arm64"}

GOOD = """\
== [0m00s] bootstrap: Debian packages and the pinned Python environment
   done in 0m05s
== [7m10s] demonstration: the tuned service and an untuned twin, alone and beside a CPU-saturating neighbour
   [0m01s] TASK [Start the untuned twin]
                         tokens/s     p99 gap ms  vs alone (tok/s, p99)
untuned, alone              65.32           22.8
untuned + neighbour         17.09          388.8          0.26x, 17.05x
tuned, alone                62.93           32.7
tuned + neighbour           55.02           37.4           0.87x, 1.14x
(neighbour: stress-ng on every CPU; tuned: system.slice AllowedCPUs=0, ...)
   done in 1m30s
== [8m40s] samples: the front door's one address (chat, stream, JSON mode, a wrong key); per host the tuned state and a sample
== front door http://127.0.0.1:40123/v1 (HAProxy on lab-kunpeng-1, model tiny-llama, in front of lab-kunpeng-1, lab-xeon-1)
   chat completion: ' cache node'
   streamed completion: 16 tokens, first token 95 ms, 18.20 tokens/s end to end: ' the model'
   json mode: {"state": "tuned"}
   wrong key: refused, HTTP 401
== lab-kunpeng-1 (arm64)
   cpuinfer-inference.slice AllowedCPUs               0
   drift: none
   sample completion: ' the model cache'
   16 tokens, first token 80 ms, 20.10 tokens/s end to end, median of 3 (19.00 20.10 21.00; software-emulated CPU)
   json mode: {"state": "idle"}
== lab-xeon-1 (amd64)
   IRQ affinity                                       0
   drift: none
   sample completion: ' node latency'
   14 tokens, first token 26 ms, 82.49 tokens/s end to end, median of 3 (49.00 82.49 95.16; software-emulated CPU)
   json mode: { "state": "serving" }
== [8m45s] rollout: a rolling restart of every instance (playbooks/canary.yml) while clients stream through the front door
   [  3s] TASK [Check the target]
   load: 1.8 s between requests (half of what the slowest instance serves), calibrated through the front door http://127.0.0.1:40123/v1
rollout under load: sent 112, completed 112, failed 0, truncated 0, p99 TTFT steady 0.4 s -> rollout 1.9 s
   done in 4m10s

Lab up in 12m55s. Hosts (inventory: inventories/lab/hosts.yml):
"""


def test_a_finished_main_job_has_no_problems():
    assert main_job.problems(GOOD, HOSTS) == []


@pytest.mark.parametrize("broken, expected", [
    (GOOD.replace("Lab up in 12m55s.", "lab-up: phase 'demonstration' failed"), "did not finish"),
    (GOOD.replace("tuned + neighbour           55.02", "tuned + neighbour           n/a"), "'tuned + neighbour'"),
    (GOOD.replace("drift: none\n   sample completion: ' node", "drift: cpuinfer-inference.slice AllowedCPUs\n"
                  "   sample completion: ' node"), "lab-xeon-1: drift: cpuinfer-inference.slice AllowedCPUs"),
    (GOOD.replace("   sample completion: ' the model cache'\n", ""), "lab-kunpeng-1: no sample completion"),
    (GOOD.replace("   16 tokens", "   0 tokens"), "lab-kunpeng-1: the sample completion has no tokens"),
    (GOOD.replace('json mode: {"state": "idle"}', 'json mode: {"state": "id'), "lab-kunpeng-1: the JSON-mode reply is not JSON"),
    (GOOD.replace('json mode: { "state": "serving" }', 'json mode: ["serving"]'), "lab-xeon-1: the JSON-mode reply is not an object"),
    (GOOD.replace("   json mode: { \"state\": \"serving\" }\n", ""), "lab-xeon-1: no JSON-mode reply"),
    (GOOD.replace("== lab-kunpeng-1 (arm64)", "== lab-kunpeng-1 (amd64)"), "lab-kunpeng-1: shown as amd64"),
    (GOOD.replace("== front door http", "== the front door http"), "no front door block"),
    (GOOD.replace("   chat completion: ' cache node'\n", ""), "front door: no chat completion"),
    (GOOD.replace("streamed completion: 16 tokens", "streamed completion: 0 tokens"), "front door: no streamed completion"),
    (GOOD.replace('json mode: {"state": "tuned"}', 'json mode: "tuned"'), "front door: the JSON-mode reply is not an object"),
    (GOOD.replace("wrong key: refused, HTTP 401", "wrong key: ACCEPTED (the key is not checked)"), "a wrong key was not refused"),
    (GOOD.replace("rollout under load: sent", "rollout: sent"), "no 'rollout under load"),
    (GOOD.replace("completed 112, failed 0", "completed 111, failed 1"), "111 of 112 requests completed, 1 failed"),
    (GOOD.replace("failed 0, truncated 0", "failed 0, truncated 2"), "112 of 112 requests completed, 0 failed, 2 truncated"),
    (GOOD.replace("sent 112, completed 112", "sent 0, completed 0"), "no request was sent"),
])
def test_what_is_missing_is_named(broken, expected):
    found = main_job.problems(broken, HOSTS)
    assert any(expected in problem for problem in found), found


def test_a_host_without_a_report_is_named():
    found = main_job.problems(GOOD, dict(HOSTS, **{"lab-phytium-1": "arm64"}))
    assert found == ["lab-phytium-1 (arm64): no report in the samples phase"]


def test_the_command_line_exits_non_zero_on_a_problem(tmp_path, capsys):
    output = tmp_path / "lab-up.out"
    output.write_text(GOOD.replace("drift: none", "drift: THP enabled"), encoding="utf-8")
    assert main_job.main([str(output)]) == 1
    assert "drift: THP enabled" in capsys.readouterr().err
    output.write_text(GOOD, encoding="utf-8")
    assert main_job.main([str(output)]) == 0


def test_a_recorded_summary_with_a_failed_request_fails_the_command_line(tmp_path, capsys):
    output = tmp_path / "lab-up.out"
    output.write_text(GOOD.replace("completed 112, failed 0", "completed 111, failed 1"), encoding="utf-8")
    assert main_job.main([str(output)]) == 1
    assert "rollout under load: 111 of 112 requests completed, 1 failed" in capsys.readouterr().err
