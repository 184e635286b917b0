"""The main job's rollout row and its reading of the front door's log (scripts/lab_rollout.py)."""

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "scripts"))
import lab_rollout  # noqa: E402  (a script directory, not a package)

LINE = ('Dec 05 11:38:39.499908 lab-kunpeng-1 haproxy[809]: 10.0.2.2:34912 [05/Dec/2026:11:38:38.828] fe-tiny-llama '
        'tiny-llama/lab-xeon-1--tiny-llama 0/0/45/139/666 200 11224 - - ---- 4/4/2/0/0 0/0 "POST /v1/completions HTTP/1.1"')


def test_the_row_says_every_count_and_both_p99s():
    summary = {"sent": 12, "completed": 11, "failed": 1, "truncated": 0, "ttft_p99_s_steady": 0.14, "ttft_p99_s_rollout": None}
    assert lab_rollout.row(summary) == ("rollout under load: sent 12, completed 11, failed 1, truncated 0, "
                                        "p99 TTFT steady 0.1 s -> rollout -")


def test_a_retried_request_is_told_by_the_retries_field_not_by_the_timers():
    assert not lab_rollout.RETRIED.search(LINE)  # the timers 0/0/45/139/666 have five fields too
    assert lab_rollout.RETRIED.search(LINE.replace("4/4/2/0/0", "4/4/2/0/+1"))
    assert lab_rollout.RETRIED.search(LINE.replace("4/4/2/0/0", "4/4/2/0/2"))


def test_the_lifecycle_keeps_an_oom_kill_and_leaves_out_the_engines_cache_notes(monkeypatch):
    lines = ["llama-server[988]: W srv alloc:  - making room for prompt cache entry, removing oldest entry",
             "kernel: oom-kill:constraint=CONSTRAINT_NONE,task=llama-server", "systemd[1]: Started cpuinfer-llama-tiny.service"]
    monkeypatch.setattr(lab_rollout, "journal", lambda host, minutes, *selector: lines)
    assert lab_rollout.instance_lifecycle(lab_rollout.instance_journals(["h"], 5)) == ["h: " + lines[1], "h: " + lines[2]]


def test_a_failed_rollout_keeps_the_whole_window_of_the_front_door_and_the_instances(monkeypatch, tmp_path, capsys):
    def journal(host, minutes, *selector):
        return ["%s %s line" % (host, "haproxy" if "haproxy" in selector else "instance")]

    monkeypatch.setattr(lab_rollout, "journal", journal)
    log = str(tmp_path / "rollout.log")
    lab_rollout.keep_journals(log, journal("door", 5, "-t", "haproxy"), lab_rollout.instance_journals(["door", "other"], 5))
    assert (tmp_path / "rollout.log.haproxy").read_text() == "door haproxy line\n"
    assert (tmp_path / "rollout.log.instances").read_text() == "door: door instance line\nother: other instance line\n"
    assert "rollout.log.haproxy" in capsys.readouterr().err
