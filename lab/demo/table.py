"""Print the main job's demonstration: tokens/s and p99 inter-token of the service alone and beside a
CPU-saturating neighbour, untuned and tuned, with the ratios to the same service alone.

Usage: python lab/demo/table.py SAMPLES_JSON   (lab/demo/isolation.yml writes it)
"""

import json
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "benchmarks"))
import stats  # noqa: E402  (the benchmarks' own summaries)

ROWS = [("untuned, alone", "a_untuned", None), ("untuned + neighbour", "b_untuned_neighbour", "a_untuned"),
        ("tuned, alone", "a_tuned", None), ("tuned + neighbour", "c_tuned_neighbour", "a_tuned")]


def table(raw):
    summary = stats.summarize(raw["samples"])
    lines = ["%-22s %10s %14s %22s" % ("", "tokens/s", "p99 gap ms", "vs alone (tok/s, p99)")]
    for label, variant, alone in ROWS:
        mine = summary[variant]
        versus = ""
        if alone:
            ratio = stats.ratio(summary, variant, alone)
            versus = "%.2fx, %.2fx" % (ratio["tokens_per_second"], ratio["inter_token_p99"])
        row = (label, mine["tokens_per_second_median"], mine["inter_token_p99_ms"], versus)
        lines.append("%-22s %10.2f %14s %22s" % row)
    tuned = raw["units"].get("system.slice", {}).get("AllowedCPUs", "?")
    lines.append("(neighbour: stress-ng on every CPU; tuned: system.slice AllowedCPUs=%s, the service on the "
                 "inference CPUs; %s rounds, software-emulated CPUs: only the ratios mean anything)"
                 % (tuned, len({s["round"] for s in raw["samples"]})))
    return "\n".join(lines)


if __name__ == "__main__":
    print(table(json.loads(Path(sys.argv[1]).read_text(encoding="utf-8"))))
