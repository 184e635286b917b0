"""Where a test stage's time went: the slowest tasks of every playbook run it made (molecule's own
and the ansible-playbook runs its scenarios start), read from ansible-core's junit callback output.

A task runs on its hosts in parallel, so its wall time is the longest of its per-host test cases.
Usage: python -m cpuinfer_lab.task_times JUNIT_DIR [--top N]
"""

import argparse
import pathlib
import re
import xml.etree.ElementTree as ET

# "[host] play name: task name" as the junit callback names a test case (task arguments hidden)
_CASE_NAME = re.compile(r"\[(?P<host>[^\]]*)\] (?P<play>.*?): (?P<task>.*)\Z", re.S)
# a task's file from the collection's top (the repository is also reached through .build/collections/...)
_IN_COLLECTION = re.compile(r"\A.*?/(?=(roles|playbooks|molecule|lab|benchmarks)/)")


def _runs(cases):
    """A task's runs: the junit callback writes each run's per-host cases together, in task order.
    [(key, seconds)], a run's wall time being its slowest host's."""
    runs, current, hosts = [], None, set()
    for case in cases:
        match = _CASE_NAME.match(case.get("name", ""))
        host, task = (match.group("host"), match.group("task")) if match else ("", case.get("name", ""))
        key = (_IN_COLLECTION.sub("", case.get("classname", "")), task)
        seconds = float(case.get("time", 0.0))
        if current is not None and current[0] == key and host not in hosts:
            current[1] = max(current[1], seconds)
            hosts.add(host)
            continue
        current, hosts = [key, seconds], {host}
        runs.append(current)
    return runs


def task_times(junit_dir):
    """[(seconds, where, task, runs)] over every playbook run in junit_dir, slowest first; a task run
    more than once (an include per item, two playbook runs) sums its runs."""
    totals = {}
    for report in sorted(pathlib.Path(junit_dir).glob("*.xml")):
        for key, seconds in _runs(ET.parse(report).getroot().iter("testcase")):
            total, count = totals.get(key, (0.0, 0))
            totals[key] = (total + seconds, count + 1)
    return sorted(((seconds, where, task, count) for (where, task), (seconds, count) in totals.items()),
                  key=lambda row: -row[0])


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("junit_dir")
    parser.add_argument("--top", type=int, default=15)
    args = parser.parse_args(argv)
    rows = task_times(args.junit_dir)
    total = sum(row[0] for row in rows)
    lines = ["slowest tasks (wall seconds over %d tasks, %.0f s in all; a task that runs a playbook also counts "
             "that playbook's tasks):" % (len(rows), total)]
    for seconds, where, task, runs in rows[:args.top]:
        lines.append("%7.1f  %s %s%s" % (seconds, where, task[:120], " (%d runs)" % runs if runs > 1 else ""))
    print("\n".join(lines))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
