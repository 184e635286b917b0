"""Sums the cProfile stats the workers of one ansible-playbook run left (benchmarks/callbacks/cpuinfer_task_cpu.py,
CPUINFER_TASK_PROFILE_DIR) and prints the top entries by cumulative process time, as a markdown table.

Usage: worker_profile.py DIR [--top N]. Each worker's stats count its own Python only (process time, the profiler's
overhead included): not the fork, the exit, or the ssh clients it waited for."""

import argparse
import pstats
from pathlib import Path

# an entry holding more than this share of the whole is a frame every worker runs through (the worker's run, the
# task executor's): it says nothing about where the time went
WRAPPER_SHARE = 0.8


def summed(directory):
    files = sorted(str(p) for p in Path(directory).glob("*.prof"))
    if not files:
        raise SystemExit("worker_profile: no .prof files in %s" % directory)
    stats = pstats.Stats(files[0])
    for path in files[1:]:
        stats.add(path)
    return stats, len(files)


def label(function):
    path, line, name = function
    if path == "~":
        return name
    parts = Path(path).parts
    # ansible/template/__init__.py rather than the whole site-packages path
    for anchor in ("ansible", "ansible_collections", "jinja2", "yaml"):
        if anchor in parts:
            return "%s:%d %s" % ("/".join(parts[parts.index(anchor):]), line, name)
    return "%s:%d %s" % (Path(path).name, line, name)


def table(stats, workers, top):
    total = sum(entry[2] for entry in stats.stats.values())  # own time of every function: the profiled whole
    rows = sorted(((function, entry) for function, entry in stats.stats.items() if entry[3] <= WRAPPER_SHARE * total),
                  key=lambda item: item[1][3], reverse=True)
    lines = ["%d workers, %.2f s of profiled process time in all (%.1f ms each)" % (workers, total, 1000 * total / workers),
             "", "| function | calls | cumulative s | own s |", "|---|---|---|---|"]
    for function, entry in rows[:top]:
        calls, own, cumulative = entry[1], entry[2], entry[3]
        lines.append("| `%s` | %d | %.2f | %.2f |" % (label(function), calls, cumulative, own))
    return "\n".join(lines)


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("directory")
    parser.add_argument("--top", type=int, default=20)
    args = parser.parse_args()
    stats, workers = summed(args.directory)
    print(table(stats, workers, args.top))


if __name__ == "__main__":
    main()
