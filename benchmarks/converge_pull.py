"""The pull mode's run time on a lab host, for the converge benchmark: the host converged by the controller and put
into pull mode (playbooks/pull_enable.yml, as molecule/pull does it), then converged by its own timer from a
repository this controller serves it - no controller in the loop. Three runs, each read from the host's own record
(cpuinfer-pull-run's state: the run's duration and its play's task counts):

- the first pull: the host's own converge of the commit the controller converged (nothing to change);
- a run of the unchanged repository (ansible-pull's --only-if-changed: the fetch, no playbook);
- a change pushed to the host's ref (every instance's CPUWeight): a converge that changes the units and restarts.
"""

import json
import os
import shlex
import subprocess
import sys
import time

import yaml

from common import REPO, lab, log, playbook, role_default

FLEET_REPO = REPO / "molecule" / "pull" / "fleet_repo.py"
FLEET_VARS = REPO / "molecule" / "pull" / "vars" / "fleet.yml"
GIT_PORT = 39418  # the VM's controller_ports: the guest reaches it at 10.0.2.99
STATE = "/var/lib/cpuinfer/pull/state.json"
WAIT_S = 1500
TIMER = {"pull_interval": 60, "pull_random_delay": 0, "pull_first_delay": 5}


def on_host(name, *argv):
    """A command's output on the VM (as root). ssh gives the guest's shell one line: the words are quoted into it."""
    result = subprocess.run([str(REPO / "scripts" / "lab"), "ssh", name, "--", shlex.join(["sudo", *argv])],
                            capture_output=True, text=True, check=False)
    if result.returncode:
        raise SystemExit("bench: %s on %s failed: %s" % (" ".join(argv), name, result.stderr[-1000:]))
    return result.stdout


def host_state(name):
    text = on_host(name, "sh", "-c", "cat %s 2>/dev/null || true" % STATE)
    return json.loads(text) if text.strip() else {}


def wait_for(name, what, done):
    """The host's state once done(state) holds; polled every 10 s, WAIT_S at most."""
    deadline = time.monotonic() + WAIT_S
    while True:
        state = host_state(name)
        if done(state):
            return state
        if time.monotonic() > deadline:
            raise SystemExit("bench: %s: no %s within %d s; its state: %s" % (name, what, WAIT_S, state))
        time.sleep(10)


def converged(commit):
    return lambda state: (state.get("converged") or {}).get("commit") == commit


def record(kind, state):
    run_ = state["run"]
    playbook_run = state.get("playbook") or {}
    ran = playbook_run.get("time") == run_["time"]
    return {"run": kind, "seconds": round(run_["duration"], 1), "succeeded": run_["succeeded"],
            "playbook_ran": ran, "tasks": playbook_run.get("tasks") if ran else None}


def measure(vm, inventory, topology_path, extra, pin, workdir):
    """Boot `vm` fresh, put it into pull mode and time its own runs; [records], the enabling run's figures."""
    name = vm["name"]
    lab("down", name)
    lab("up", "--specs", json.dumps([vm]), *(["--pin"] if pin else []))
    lab("inventory", "--topology", topology_path, "--output", inventory / "hosts.yml")
    # the pulled inventory names the model under the fleet's lab_models_dir: there, a link to the copy the controller
    # places (by its checksum, in the role's model directory)
    fleet = yaml.safe_load(FLEET_VARS.read_text(encoding="utf-8"))
    model = fleet["llama_server_instances"][0]
    on_host(name, "mkdir", "-p", fleet["lab_models_dir"])
    on_host(name, "ln", "-sfn", "%s/%s.gguf" % (role_default("llama_server", "llama_server_model_dir"), model["model_sha256"]),
            os.path.join(fleet["lab_models_dir"], os.path.basename(model["model"])))
    repo = workdir / "git"
    first = run_out([sys.executable, FLEET_REPO, "init", REPO, repo, FLEET_VARS, name])
    daemon = subprocess.Popen(["git", "daemon", "--reuseaddr", "--listen=127.0.0.1", "--port=%d" % GIT_PORT,
                               "--base-path=%s" % repo, "--export-all"])
    try:
        usage = {}
        seconds = playbook(inventory, "playbooks/pull_enable.yml", *extra, "-e", "@%s" % FLEET_VARS,
                           "-e", "lab_models_dir=%s" % (REPO / ".build" / "models"),
                           "-e", "pull_repository_url=git://10.0.2.99:%d/fleet.git" % GIT_PORT,
                           "-e", "pull_inventory=inventories/pull-lab/hosts.yml", "-e", json.dumps(TIMER), usage=usage)[0]
        enabling = {"seconds": round(seconds), **usage}
        log("%s: pull mode enabled in %.0f s; waiting for its own runs" % (name, seconds))
        runs = [record("first pull (the controller's commit, nothing to change)",
                       wait_for(name, "first pull of %s" % first, converged(first)))]
        after = runs_after(name)
        runs.append(record("unchanged repository (--only-if-changed)",
                           wait_for(name, "run after %s" % after, lambda s: (s.get("run") or {}).get("time", 0) > after)))
        change = run_out([sys.executable, FLEET_REPO, "change", repo, "lab_cpu_weight=150"])
        runs.append(record("a change pushed (every instance's CPUWeight)",
                           wait_for(name, "converge of %s" % change, converged(change))))
        return runs, enabling
    finally:
        daemon.terminate()
        daemon.wait()


def runs_after(name):
    return (host_state(name).get("run") or {}).get("time", 0)


def run_out(argv):
    return subprocess.run([str(a) for a in argv], capture_output=True, text=True, check=True, cwd=REPO).stdout.strip()
