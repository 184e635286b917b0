"""What the README's main command (scripts/lab-up) must have shown a new user, read from its output.

The test stage `lab-up` runs scripts/lab-up as the README says and checks its end state with this:
the closing "Lab up in" line, the demonstration's table with its four rows, the front door's block
(a chat completion, a streamed completion with tokens, a JSON-mode object, a wrong key refused with 401),
per host of the topology its tuned state with `drift: none`, a sample completion and a JSON-mode reply,
and the rollout row with every request completed: none failed, none cut short.

Usage: python -m cpuinfer_lab.main_job OUTPUT_FILE [--topology lab/topology.json]
"""

import argparse
import json
import re
import sys
from pathlib import Path

from . import topology

DEMO_ROWS = ("untuned, alone", "untuned + neighbour", "tuned, alone", "tuned + neighbour")
_NUMBER = r"\d+(?:\.\d+)?"
_HOST = re.compile(r"^== (?P<name>\S+) \((?P<arch>[a-z0-9_]+)\)$")
_TOKENS = re.compile(r"^\s+(?P<tokens>\d+) tokens, first token")
_FRONTDOOR = re.compile(r"^== front door (?P<url>\S+) ")
_STREAMED = re.compile(r"^(?P<tokens>\d+) tokens, first token")
_ROLLOUT = re.compile(r"^rollout under load: sent (?P<sent>\d+), completed (?P<completed>\d+), failed (?P<failed>\d+), "
                      r"truncated (?P<truncated>\d+), p99 TTFT steady (?P<steady>\S+)(?: s)? -> rollout (?P<rollout>\S+)(?: s)?",
                      re.MULTILINE)


def host_blocks(output: str) -> dict[str, tuple[str, list[str]]]:
    """{host: (arch, lines)} of the samples phase: each block from its `== NAME (ARCH)` line to the next."""
    blocks: dict[str, tuple[str, list[str]]] = {}
    current = None
    for line in output.splitlines():
        header = _HOST.match(line)
        if header:
            current = header.group("name")
            blocks[current] = (header.group("arch"), [])
        elif line.startswith("== ") or not line.startswith(" "):
            current = None
        elif current is not None:
            blocks[current][1].append(line)
    return blocks


def _value_after(lines: list[str], label: str) -> str | None:
    for line in lines:
        if line.strip().startswith(label):
            return line.strip()[len(label):].strip()
    return None


def frontdoor_block(output: str) -> list[str] | None:
    """The lines of the samples phase's front door block, None when there is none."""
    lines = output.splitlines()
    start = next((i for i, line in enumerate(lines) if _FRONTDOOR.match(line)), None)
    if start is None:
        return None
    block = []
    for line in lines[start + 1:]:
        if not line.startswith(" "):
            break
        block.append(line)
    return block


def _json_object_problem(what: str, reply: str | None) -> str | None:
    if reply is None:
        return "%s: no JSON-mode reply" % what
    try:
        parsed = json.loads(reply)
    except ValueError as error:
        return "%s: the JSON-mode reply is not JSON (%s): %r" % (what, error, reply)
    if not isinstance(parsed, dict):
        return "%s: the JSON-mode reply is not an object: %r" % (what, reply)
    return None


def frontdoor_problems(output: str) -> list[str]:
    lines = frontdoor_block(output)
    if lines is None:
        return ["no front door block ('== front door URL ...') in the samples phase"]
    problems = []
    if _value_after(lines, "chat completion:") is None:
        problems.append("front door: no chat completion")
    streamed = _STREAMED.match(_value_after(lines, "streamed completion:") or "")
    if not streamed or int(streamed.group("tokens")) < 1:
        problems.append("front door: no streamed completion with tokens")
    problems.append(_json_object_problem("front door", _value_after(lines, "json mode:")))
    if _value_after(lines, "wrong key:") != "refused, HTTP 401":
        problems.append("front door: a wrong key was not refused with 401 (%s)" % _value_after(lines, "wrong key:"))
    return [problem for problem in problems if problem]


def rollout_problems(output: str) -> list[str]:
    found = _ROLLOUT.search(output)
    if not found:
        return ["no 'rollout under load: ...' row: the rolling restart under load did not report"]
    sent, completed, failed, truncated = (int(found.group(k)) for k in ("sent", "completed", "failed", "truncated"))
    problems = []
    if sent < 1:
        problems.append("rollout under load: no request was sent")
    if failed or truncated or completed != sent:
        problems.append("rollout under load: %d of %d requests completed, %d failed, %d truncated"
                        % (completed, sent, failed, truncated))
    return problems


def host_problems(name: str, arch: str, block: tuple[str, list[str]] | None) -> list[str]:
    if block is None:
        return ["%s (%s): no report in the samples phase" % (name, arch)]
    shown_arch, lines = block
    problems = []
    if shown_arch != arch:
        problems.append("%s: shown as %s, the topology says %s" % (name, shown_arch, arch))
    drift = _value_after(lines, "drift:")
    if drift != "none":
        problems.append("%s: drift: %s (want none)" % (name, drift))
    if _value_after(lines, "sample completion:") is None:
        problems.append("%s: no sample completion" % name)
    tokens = [int(m.group("tokens")) for m in map(_TOKENS.match, lines) if m]
    if not tokens or tokens[0] < 1:
        problems.append("%s: the sample completion has no tokens" % name)
    problem = _json_object_problem(name, _value_after(lines, "json mode:"))
    return problems + ([problem] if problem else [])


def demo_problems(output: str) -> list[str]:
    problems = []
    for row in DEMO_ROWS:
        if not re.search(r"(?m)^%s\s+%s\s+\S+" % (re.escape(row), _NUMBER), output):
            problems.append("the demonstration's table has no row %r with tokens/s and p99" % row)
    return problems


def problems(output: str, hosts: dict[str, str]) -> list[str]:
    """Everything the main command's output lacks; hosts maps each topology host to its arch."""
    found = []
    if not re.search(r"(?m)^Lab up in \d+m\d\ds\.", output):
        found.append("no closing 'Lab up in ...' line: the main command did not finish")
    found += demo_problems(output)
    found += frontdoor_problems(output)
    found += rollout_problems(output)
    blocks = host_blocks(output)
    for name, arch in sorted(hosts.items()):
        found += host_problems(name, arch, blocks.get(name))
    return found


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(prog="main_job", description=__doc__.splitlines()[0])
    parser.add_argument("output")
    parser.add_argument("--topology", default=str(topology.DEFAULT))
    args = parser.parse_args(argv)
    hosts = {entry["name"]: entry["arch"] for entry in topology.load(args.topology).vms}
    output = Path(args.output).read_text(encoding="utf-8", errors="replace")
    found = problems(output, hosts)
    for problem in found:
        print("main job: %s" % problem, file=sys.stderr)
    if not found:
        print("main job: finished; demonstration table of %d rows; the front door answered (chat, stream, JSON, 401); "
              "%s: drift none, a completion and a JSON reply each; %s"
              % (len(DEMO_ROWS), ", ".join(sorted(hosts)), _ROLLOUT.search(output).group(0)))
    return 1 if found else 0


if __name__ == "__main__":
    sys.exit(main())
