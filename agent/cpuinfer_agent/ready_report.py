"""llama_server's check at the end of a converge, one run for every instance of the host.

Usage: cpuinfer-ready-report RECORD TIMEOUT_SECONDS NAME:PORT:ENGINE...   (API key in LLAMA_SERVER_API_KEY)

When an instance's unit is not enabled or not running, it prints which ones and waits for nothing: the role
starts those with its systemd module and runs the check again. When every unit runs: it waits until each
instance answers (/health for llama-server, a 1-token completion for the Python server), measures each
unit's exposure with `systemd-analyze security` and rewrites RECORD (JSON, instance name -> exposure) only
when that differs. Prints one JSON object: {"stopped": [...], "exposure": {...}, "record_changed": bool}.
Exit 1 with the reason and the unit's last log lines when an instance does not get ready.
One run instead of a wait, a measurement and a file write per instance, each a round trip of its own.
"""

import json
import os
import re
import subprocess
import sys

from ansible_collections.cpuinfer.llm.plugins.module_utils._persist import create_parents, read_file, replace_file
from cpuinfer_agent.unit_metrics import SERVER_ENGINES
from cpuinfer_agent.wait_ready import journal_tail, unit_state, wait

RUNNING_STATES = ("active", "activating", "reloading")  # a unit starting after the role's restart is on its way
EXPOSURE = re.compile(r"Overall exposure level for \S+: ([0-9.]+)")


def unit_name(instance):
    return "cpuinfer-llama-%s.service" % instance


def parse_instances(specs):
    """[(name, port, probe)] from NAME:PORT:ENGINE arguments."""
    instances = []
    for spec in specs:
        name, port, engine = spec.rsplit(":", 2)
        instances.append((name, int(port), "health" if engine in SERVER_ENGINES else "completion"))
    return instances


def stopped(names):
    """Units of `names` that are not enabled or not running."""
    result = []
    for name in names:
        state = unit_state(unit_name(name), ("UnitFileState", "ActiveState"))
        if state.get("UnitFileState") != "enabled" or state.get("ActiveState") not in RUNNING_STATES:
            result.append(name)
    return result


def exposure(name):
    out = subprocess.run(["systemd-analyze", "security", "--no-pager", unit_name(name)],
                         capture_output=True, text=True, check=True).stdout
    match = EXPOSURE.search(out)
    if not match:
        raise RuntimeError("systemd-analyze security printed no overall exposure for %s" % unit_name(name))
    return float(match.group(1))


def write_if_changed(path, content):
    """Replace the record whole (written beside it, renamed over it) only when its text differs."""
    if read_file("/", path) == content:
        return False
    create_parents("/", path)
    replace_file("/", path, content, mode=0o640)
    return True


def main(argv=None):
    argv = sys.argv if argv is None else argv
    record, timeout, instances = argv[1], float(argv[2]), parse_instances(argv[3:])
    names = [instance[0] for instance in instances]
    not_running = stopped(names)
    if not_running:
        print(json.dumps({"stopped": not_running, "exposure": {}, "record_changed": False}))
        return 0
    api_key = os.environ.get("LLAMA_SERVER_API_KEY", "")
    for name, port, probe in instances:
        reason = wait(unit_name(name), port, timeout, probe, api_key)
        if reason:
            sys.stderr.write("%s\n--- last log lines ---\n%s" % (reason, journal_tail(unit_name(name))))
            return 1
    levels = {name: exposure(name) for name in names}
    changed = write_if_changed(record, json.dumps(levels, indent=4, sort_keys=True) + "\n")
    print(json.dumps({"stopped": [], "exposure": levels, "record_changed": changed}))
    return 0


if __name__ == "__main__":
    sys.exit(main())
