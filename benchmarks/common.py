"""What every benchmark shares: where reports go, how they are headed and written, the commands that run
the lab and playbooks, the role's own pins, and the arguments every benchmark takes alike."""

import datetime
import json
import os
import platform
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import yaml

import machine
from cpuinfer_lab.vm import load_record  # machine put the lab on the path

REPO = Path(__file__).resolve().parents[1]
OUT = REPO / "docs" / "benchmarks"
MODELS = REPO / ".build" / "models"
EMULATION_NOTE = ("The lab VMs run under QEMU software emulation (TCG) on a 2-core machine: absolute numbers "
                  "mean little, the ratios between variants measured side by side are the result.")


def log(message):
    sys.stderr.write("bench: %s\n" % message)
    sys.stderr.flush()


def run(argv, **kwargs):
    log("$ " + " ".join(str(a) for a in argv))
    return subprocess.run([str(a) for a in argv], check=True, **dict({"cwd": REPO}, **kwargs))


def lab(*args):
    return run([REPO / "scripts" / "lab", *args])


# What docs/rollout.md recommends for every fleet: modules piped into the remote Python (one round
# trip per module run instead of a copy, a run and a removal).
PLAYBOOK_ENV = {"ANSIBLE_PIPELINING": "true", "ANSIBLE_TIMEOUT": "60"}
# What a controller that opts into Mitogen sets (docs/rollout.md, "Mitogen"); scripts/bootstrap links the
# strategy plugins' directory. Mitogen's ssh ignores ansible_ssh_common_args' StrictHostKeyChecking=no.
MITOGEN_ENV = {"ANSIBLE_STRATEGY": "mitogen_linear", "ANSIBLE_HOST_KEY_CHECKING": "false",
               "ANSIBLE_STRATEGY_PLUGINS": str(REPO / ".build" / "mitogen-strategy")}

# ansible-playbook's own CPU apart from its workers' (benchmarks/callbacks/cpuinfer_controller_cpu.py)
CPU_CALLBACK_ENV = {"ANSIBLE_CALLBACK_PLUGINS": str(REPO / "benchmarks" / "callbacks"),
                    "ANSIBLE_CALLBACKS_ENABLED": "cpuinfer_controller_cpu"}
# and, where a benchmark asks (per_task), each worker's by host and task (benchmarks/callbacks/cpuinfer_task_cpu.py)
TASK_CALLBACK = "cpuinfer_task_cpu"
# the tasks of a run that cost its workers most, per host
TOP_TASKS = 10


def playbook(inventory, book, *extra, usage=None, env=None, per_task=False):
    """Runs a playbook; returns (wall seconds, output). usage, a dict, receives the controller CPU seconds
    (user + system of ansible-playbook and everything it ran on the controller) and, of them, ansible-playbook's
    main process's own (its callback cpuinfer_controller_cpu), and with per_task the workers' by task (task_cpu);
    env is added to PLAYBOOK_ENV."""
    started = time.monotonic()
    cpu_before = controller_cpu_seconds()
    argv = ["ansible-playbook", "-i", str(inventory), book, *extra]
    log("$ " + " ".join(argv))
    with tempfile.TemporaryDirectory(prefix="cpuinfer-bench.") as scratch:
        own_cpu, tasks = Path(scratch) / "main-process-cpu.json", Path(scratch) / "task-cpu.jsonl"
        callbacks = dict(CPU_CALLBACK_ENV, CPUINFER_CONTROLLER_CPU_FILE=str(own_cpu))
        if per_task:
            callbacks.update(ANSIBLE_CALLBACKS_ENABLED=CPU_CALLBACK_ENV["ANSIBLE_CALLBACKS_ENABLED"] + "," + TASK_CALLBACK,
                             CPUINFER_TASK_CPU_FILE=str(tasks))
        result = subprocess.run(argv, cwd=REPO, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                                check=False, env=dict(os.environ, **PLAYBOOK_ENV, **callbacks, **(env or {})))
        sys.stderr.write(result.stdout[-6000:])
        if result.returncode:
            raise SystemExit("bench: %s failed (exit %d)" % (book, result.returncode))
        if usage is not None:
            usage["controller_cpu_seconds"] = round(controller_cpu_seconds() - cpu_before, 1)
            if own_cpu.exists():
                usage["main_process_cpu_seconds"] = round(json.loads(own_cpu.read_text())["main_process_cpu_seconds"], 1)
            if tasks.exists():
                usage.update(task_cpu([json.loads(line) for line in tasks.read_text().splitlines()]))
    return time.monotonic() - started, result.stdout


def task_cpu(records, controller="localhost"):
    """From the workers' records (one per host and task): tasks per host and the TOP_TASKS tasks whose workers cost
    most, CPU seconds per host (the worker's own and its ssh clients' and commands'), over the hosts other than the
    controller's own plays."""
    hosts = sorted({r["host"] for r in records} - {controller})
    if not hosts:
        return {}
    mine = [r for r in records if r["host"] != controller]
    per_task = {}
    for r in mine:
        key = (r["task"], r["action"])
        per_task[key] = per_task.get(key, 0) + r["user"] + r["sys"] + r["children_user"] + r["children_sys"]
    top = sorted(per_task.items(), key=lambda item: -item[1])[:TOP_TASKS]
    return {"tasks_per_host": round(len(mine) / len(hosts), 1),
            "workers_recorded_cpu_seconds_per_host": round(sum(per_task.values()) / len(hosts), 2),
            "top_tasks": [{"task": task, "action": action, "cpu_seconds_per_host": round(seconds / len(hosts), 3)}
                          for (task, action), seconds in top]}


def controller_cpu_seconds():
    """CPU seconds of this process's finished children (ansible-playbook and its forks, once waited for)."""
    children = resource.getrusage(resource.RUSAGE_CHILDREN)
    return children.ru_utime + children.ru_stime


def ensure_model(name):
    path = MODELS / ("%s.gguf" % name)
    if not path.exists():
        MODELS.mkdir(parents=True, exist_ok=True)
        run([sys.executable, REPO / "files" / "make_gguf_model.py", name, path])
    return path


def environment():
    commit = subprocess.run(["git", "rev-parse", "--short", "HEAD"], cwd=REPO, capture_output=True, text=True,
                            check=False).stdout.strip()
    cpu = next((line.split(":", 1)[1].strip() for line in Path("/proc/cpuinfo").read_text().splitlines()
                if line.startswith("model name")), platform.machine())
    return {"date": datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d %H:%M UTC"),
            "commit": commit, "controller_cpu": cpu, "controller_cpus": os.cpu_count(),
            "command": "benchmarks/run " + " ".join(sys.argv[1:])}


def run_line(env, detail=""):
    """The line every report opens with: the command, when, at which commit, on what machine."""
    where = ", controller: %s, %s CPUs" % (env["controller_cpu"], env["controller_cpus"]) if "controller_cpu" in env else ""
    return "Command: `%s` (%s, commit %s%s)%s." % (env["command"], env["date"], env["commit"], where, detail)


def write_report(name, data, markdown):
    OUT.mkdir(parents=True, exist_ok=True)
    (OUT / ("%s.json" % name)).write_text(json.dumps(data, indent=2) + "\n", encoding="utf-8")
    (OUT / ("%s.md" % name)).write_text(markdown, encoding="utf-8")
    log("wrote %s" % (OUT / ("%s.md" % name)))


def committed_report(name):
    """(the committed NAME.json, {command, date, commit} of the run that wrote it); (None, None) without one."""
    report = OUT / ("%s.json" % name)
    if not report.exists():
        return None, None
    previous = json.loads(report.read_text(encoding="utf-8"))
    return previous, {key: previous["environment"][key] for key in ("command", "date", "commit")}


def carried_places(name, measured):
    """The places of the committed report that this run skipped (--skip-native / --skip-vm), each
    marked with the command, date and commit that measured it, so one half can be rerun alone."""
    previous, origin = committed_report(name)
    if previous is None:
        return {}
    return {place: dict(result, measured_by=result.get("measured_by") or origin)
            for place, result in previous.get("places", {}).items() if place not in measured}


def in_lab_vm(name, sizes, args, repeats=1):
    """Boot benchmarks/NAME/topology.json's VM (after checking the machine is quiet; pinned unless
    --no-pin), run its prepare.yml, then measure.yml `repeats` times (sizes as extra vars; a list of them:
    one run each, in order), stop the VM
    unless --keep; returns (prepare seconds, [measure seconds], [raw output], conditions: machine check,
    per repeat the qemu threads' CPU seconds during the measurement and their pinning)."""
    topology = REPO / "benchmarks" / name / "topology.json"
    inventory = REPO / "benchmarks" / name / "inventory"
    vm_names = [vm["name"] for vm in json.loads(topology.read_text(encoding="utf-8"))["vms"]]
    ensure_model("llama-bench")
    problems = machine.check_machine(vm_names, args.force, log)
    if not args.reuse:
        lab("up", "--topology", topology, *(["--pin"] if args.pin else []))
    measure_s, raws, thread_cpu = [], [], []
    try:
        lab("inventory", "--topology", topology, "--output", inventory / "hosts.yml")
        prepare_s, dummy_output = playbook(inventory, "benchmarks/%s/prepare.yml" % name)
        per_repeat = sizes if isinstance(sizes, list) else [sizes] * repeats
        for repeat, repeat_sizes in enumerate(per_repeat):
            log("%s: measurement %d of %d" % (name, repeat + 1, len(per_repeat)))
            before = machine.qemu_threads(vm_names)
            seconds, dummy_output = playbook(inventory, "benchmarks/%s/measure.yml" % name, "-e", json.dumps(repeat_sizes))
            thread_cpu.append(machine.thread_cpu_during(before, machine.qemu_threads(vm_names)))
            measure_s.append(round(seconds))
            raws.append(json.loads((REPO / ".build" / ("bench-%s-raw.json" % name)).read_text(encoding="utf-8")))
    finally:
        if not args.keep:
            lab("down", *vm_names)
    conditions = {"machine_check": problems, "pinned": args.pin, "qemu_threads_per_repeat": thread_cpu}
    return prepare_s, measure_s, raws, conditions


def lab_forwarded(vm_name, guest_port):
    """The controller's port that the lab forwards to guest_port of vm_name (the lab's own record of the VM)."""
    record = load_record(vm_name)
    if record is None:
        raise SystemExit("bench: the lab has no record of VM %s" % vm_name)
    return record.forwarded[str(guest_port)]


def role_default(role, name):
    """A role's default (roles/ROLE/defaults/main.yml): the benchmarks build and run what the role pins."""
    return yaml.safe_load((REPO / "roles" / role / "defaults" / "main.yml").read_text(encoding="utf-8"))[name]


def role_var(role, name):
    """A role's variable (roles/ROLE/vars/main.yml), as written there."""
    return yaml.safe_load((REPO / "roles" / role / "vars" / "main.yml").read_text(encoding="utf-8"))[name]


def add_vm_options(parser, vms="VM"):
    """--keep and --reuse, alike for every benchmark that boots lab VMs."""
    parser.add_argument("--keep", action="store_true", help="leave the %s running" % vms)
    parser.add_argument("--reuse", action="store_true", help="use the %s a --keep run left running" % vms)


def add_force(parser):
    parser.add_argument("--force", action="store_true", help="measure even when the machine is busy (recorded)")
