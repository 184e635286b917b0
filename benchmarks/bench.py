"""The project's benchmarks; each writes docs/benchmarks/<name>.json and .md.

  isolation  tokens/s and inter-token latency of a streamed service under a noisy neighbour,
             untuned vs tuned, interleaved rounds on a 2-vCPU lab VM
  build      the role-built wheel vs a plain `pip install llama-cpp-python`, on this machine, against
             the memory-bandwidth bound of token generation
  converge   first converge vs re-converge, 1 host vs 3 hosts, wheel builds per run
  slo        the service's latency windows and best-effort work done, shared vs static split vs the SLO
             controller, under calm and busy client phases on a 2-vCPU lab VM
  concurrency  1/2/4/8 concurrent streaming clients, llama-server vs the Python server, on this machine
             natively and in a lab VM
  cores      whether this machine's CPUs slow each other down, below any VM (host_cores.py)
  rollout    streamed requests through a front door while a canary rollout restarts every instance:
             failed / truncated / time to first token, without front door, without drain, with drain
  engines    mainline llama-server vs ik_llama.cpp natively, default vs calibrated threads, against the
             STREAM-copy bound (engines_bench.py)

Run through benchmarks/run, which sets up the environment (README's command).
"""

import argparse
import datetime
import json
import os
import platform
import re
import resource
import statistics
import subprocess
import sys
import time
from pathlib import Path

import host_cores
import isolation_report
import machine
import rollout_bench
import stats


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
    return subprocess.run([str(a) for a in argv], check=True, cwd=REPO, **kwargs)


def lab(*args):
    return run([REPO / "scripts" / "lab", *args])


# What docs/rollout.md recommends for every fleet: modules piped into the remote Python (one round
# trip per module run instead of a copy, a run and a removal).
PLAYBOOK_ENV = {"ANSIBLE_PIPELINING": "true", "ANSIBLE_TIMEOUT": "60"}


def playbook(inventory, book, *extra, usage=None):
    """Runs a playbook; returns (wall seconds, output). usage, a dict, receives the controller CPU seconds
    (user + system of ansible-playbook and everything it ran on the controller)."""
    started = time.monotonic()
    cpu_before = controller_cpu_seconds()
    argv = ["ansible-playbook", "-i", str(inventory), book, *extra]
    log("$ " + " ".join(argv))
    result = subprocess.run(argv, cwd=REPO, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, check=False,
                            env=dict(os.environ, **PLAYBOOK_ENV))
    sys.stderr.write(result.stdout[-6000:])
    if result.returncode:
        raise SystemExit("bench: %s failed (exit %d)" % (book, result.returncode))
    if usage is not None:
        usage["controller_cpu_seconds"] = round(controller_cpu_seconds() - cpu_before, 1)
    return time.monotonic() - started, result.stdout


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


def isolation(args):
    if args.from_samples:
        data = isolation_report.rendered_again(OUT / ("%s.json" % args.report), environment()["commit"])
        write_report(args.report, data, isolation_report.markdown(data))
        return
    sizes = {"bench_rounds": args.rounds, "bench_completions": args.completions, "bench_tokens": args.tokens}
    prepare_s, measure_s, raws, conditions = in_lab_vm("isolation", sizes, args, repeats=args.repeats)
    samples = [dict(sample, repeat=index) for index, raw in enumerate(raws) for sample in raw["samples"]]
    data = {"environment": environment(), "note": EMULATION_NOTE, "prepare_seconds": round(prepare_s),
            "measure_seconds": measure_s, "repeats": args.repeats, "rounds": args.rounds,
            "completions_per_variant": args.completions, "tokens_per_completion": args.tokens,
            "units": raws[-1]["units"], "summary": stats.summarize(samples),
            **isolation_report.isolation_results(raws),
            "conditions": conditions, "samples": samples}
    write_report(args.report, data, isolation_report.markdown(data))


def nohz(args):
    """The instance with and without nohz isolation (host_tuning_isolation), interleaved: each run
    converges with its mode (the role reboots into or out of it) and measures beside a timer-heavy
    housekeeping neighbour."""
    runs = [{"host_tuning_isolation": mode, "bench_completions": args.completions, "bench_tokens": args.tokens}
            for dummy in range(args.repeats) for mode in ("none", "nohz")]
    dummy_prepare, measure_s, raws, conditions = in_lab_vm("nohz", runs, args)
    data = {"environment": environment(), "note": EMULATION_NOTE + " " + NOHZ_NOTE, "repeats": args.repeats,
            "completions_per_run": args.completions, "tokens_per_completion": args.tokens, "measure_seconds": measure_s,
            "summary": nohz_summary(runs, raws), "conditions": conditions,
            "runs": [dict(raw, mode=run["host_tuning_isolation"]) for run, raw in zip(runs, raws)]}
    write_report("nohz", data, nohz_markdown(data))


NOHZ_NOTE = ("Under TCG the guest's timer tick is emulated work on the host thread of its vCPU, so stopping it "
             "(nohz_full) saves real time on that thread; what emulation cannot show is the cache and TLB "
             "disturbance a tick costs on real hardware, nor interrupts of real devices.")


def nohz_summary(runs, raws):
    """Per mode, a spread across runs of: tokens/s (median of the run's completions), p99 inter-token gap
    (pooled over the run's completions), local timer interrupts per second on the inference CPU."""
    figures = {}
    for run, raw in zip(runs, raws):
        mode = run["host_tuning_isolation"]
        gaps = [g for sample in raw["samples"] for g in sample["gaps_ms"]]
        per_run = figures.setdefault(mode, {"tokens_per_second": [], "inter_token_p99_ms": [], "timer_irqs_per_second": []})
        per_run["tokens_per_second"].append(statistics.median(s["tokens_per_second"] for s in raw["samples"]))
        per_run["inter_token_p99_ms"].append(stats.percentile(gaps, 0.99))
        per_run["timer_irqs_per_second"].append(raw["local_timer_interrupts_per_second_cpu1"])
    summary = {mode: {name: stats.spread(values) for name, values in per_run.items()} for mode, per_run in figures.items()}
    summary["nohz_over_none"] = {
        "tokens_per_second": round(summary["nohz"]["tokens_per_second"]["median"] / summary["none"]["tokens_per_second"]["median"], 3),
        "inter_token_p99": round(summary["nohz"]["inter_token_p99_ms"]["median"] / summary["none"]["inter_token_p99_ms"]["median"], 3),
    }
    return summary


def nohz_markdown(data):
    summary, env = data["summary"], data["environment"]
    lines = ["# Kernel isolation (nohz_full): the instance with and without it", "",
             "`%s` on %s, commit %s; %d runs per mode, interleaved (none, nohz, ...), each after a converge that "
             "rebooted the VM into its mode through its own GRUB; %d completions of %d tokens per run, a timer-heavy "
             "neighbour (stress-ng timer 20 kHz + cyclic) on the housekeeping CPU." % (
                 env["command"], env["date"], env["commit"], data["repeats"], data["completions_per_run"],
                 data["tokens_per_completion"]), "",
             "| mode | tokens/s median (min-max) | p99 inter-token ms median (min-max) | timer IRQs/s on the inference CPU |",
             "|---|---|---|---|"]
    for mode in ("none", "nohz"):
        row = summary[mode]
        lines.append("| %s | %.2f (%.2f-%.2f) | %.1f (%.1f-%.1f) | %.0f (%.0f-%.0f) |" % (
            mode, row["tokens_per_second"]["median"], row["tokens_per_second"]["min"], row["tokens_per_second"]["max"],
            row["inter_token_p99_ms"]["median"], row["inter_token_p99_ms"]["min"], row["inter_token_p99_ms"]["max"],
            row["timer_irqs_per_second"]["median"], row["timer_irqs_per_second"]["min"], row["timer_irqs_per_second"]["max"]))
    ratio = summary["nohz_over_none"]
    lines += ["", "nohz over none: tokens/s %.3fx, p99 inter-token gap %.3fx." % (ratio["tokens_per_second"], ratio["inter_token_p99"]),
              "", data["note"], ""]
    return "\n".join(lines)


LLAMA_VERSION = "0.3.36"
IK_VERSION = "0.1.5"
BENCH_BUILD = REPO / ".build" / "bench-build"


def this_machine_facts():
    """This machine as the role sees a host: host_facts (read-only) and the setup module's minimum."""
    facts = {}
    for module in ("cpuinfer.llm.host_facts", "ansible.builtin.setup"):
        argv = ["ansible", "localhost", "-c", "local", "-m", module, "-o"]
        out = run(argv + (["-a", "gather_subset=min"] if module.endswith("setup") else []), stdout=subprocess.PIPE,
                  text=True).stdout
        facts.update(json.loads(out.split("=>", 1)[1])["ansible_facts"])
    return facts


def controller_build_class():
    """This machine's CPU class and CMake flags, from the collection's own facts module."""
    facts = this_machine_facts()["cpuinfer"]
    return facts["llama_build_class"], facts["llama_cmake_args"]


def role_build(build_class, cmake_args, source="llama.cpp"):
    """The engine build exactly as roles/llama_server makes it for a host like this machine (same
    script, arguments, cache; in a build root of this machine's release)."""
    files = REPO / "roles" / "llama_server" / "files"
    facts = this_machine_facts()
    runtime = facts["cpuinfer"]["runtime"]
    version = {"llama.cpp": LLAMA_VERSION, "ik_llama.cpp": IK_VERSION}[source]
    argv = [sys.executable, files / "llama_build.py", "--engine", source, "--version", version, "--build-class", build_class,
            "--cache", Path.home() / ".cache" / "cpuinfer-llm" / "builds", "--machine", platform.machine(),
            "--python-version", "%d.%d" % sys.version_info[:2], "--distribution", facts["ansible_distribution"],
            "--release", facts["ansible_distribution_release"], "--glibc", runtime["glibc"],
            "--glibcxx", runtime["glibcxx"], "--constraints", files / "server-constraints.txt"]
    argv += ["--cmake-arg=" + a for a in cmake_args]
    started = time.monotonic()
    result = json.loads(run(argv, stdout=subprocess.PIPE, text=True).stdout)
    result["seconds"] = round(time.monotonic() - started)
    return result


def venv_with(name, install_args, engine=None):
    """A venv under .build/bench-build/NAME with llama_cpp installed (with a role build's engine
    libraries linked in as the role does on hosts); reused on later runs."""
    install_args = [str(a) for a in install_args]
    venv = BENCH_BUILD / name
    python = venv / "bin" / "python"
    stamp = venv / ".installed"
    if stamp.exists() and stamp.read_text() == json.dumps(install_args):
        return python, None
    run(["/usr/bin/python3", "-m", "venv", "--clear", venv])
    started = time.monotonic()
    run([python, "-m", "pip", "install", "--quiet", *install_args])
    if engine:
        package = venv / "lib" / ("python%d.%d" % sys.version_info[:2]) / "site-packages" / "llama_cpp"
        (package / "lib").unlink(missing_ok=True)
        (package / "lib").symlink_to(engine)
    stamp.write_text(json.dumps(install_args))
    return python, round(time.monotonic() - started)


def role_install(build_class, cmake_args):
    """(python, build directory, build) of a bench venv holding the role's build for a class, as a host has it."""
    build = role_build(build_class, cmake_args)
    directory = Path(build["archive"][:-len(".tar.gz")])
    python, install_seconds = venv_with(build_class, ["--no-index", "--find-links", directory / "deps",
                                                      str(directory / build["manifest"]["wheel"]) + "[server]"],
                                        engine=directory / "engine")
    return python, directory, dict(build, install_seconds=install_seconds)


def q8_model(role_python, name="llama-250m", kind="Q8_0"):
    path = MODELS / ("%s-%s.gguf" % (name, kind.lower()))
    if not path.exists():
        f16 = ensure_model(name)
        code = ("import sys, llama_cpp\n"
                "p = llama_cpp.llama_model_quantize_default_params(); p.ftype = getattr(llama_cpp, sys.argv[3])\n"
                "sys.exit(llama_cpp.llama_model_quantize(sys.argv[1].encode(), sys.argv[2].encode(), p))")
        run([role_python, "-c", code, f16, path, "LLAMA_FTYPE_MOSTLY_" + kind])
    return path


def engines(args):
    """mainline llama-server vs ik_llama.cpp natively (engines_bench.py)."""
    import engines_bench  # pylint: disable=import-outside-toplevel
    import hashlib  # pylint: disable=import-outside-toplevel

    problems = machine.check_machine([], args.force, log)
    build_class, cmake_args = controller_build_class()
    python, mainline, dummy_build = role_install(build_class, cmake_args)
    ik = Path(role_build(build_class, cmake_args, "ik_llama.cpp")["archive"][:-len(".tar.gz")])
    models = {}
    for spec in args.models:
        name, kind = spec.split(":")
        path = q8_model(python, name, kind)
        digest = hashlib.sha256(path.read_bytes()).hexdigest()
        meta = json.loads(run([sys.executable, REPO / "roles" / "llama_server" / "files" / "check_gguf.py", path, digest],
                              stdout=subprocess.PIPE, text=True).stdout)
        models["%s %s" % (name, kind)] = (path, meta)
    cores = len(this_machine_facts()["cpuinfer"]["core_cpus"])
    bandwidth, results = engines_bench.measure(models, {"llama.cpp": mainline, "ik_llama.cpp": ik}, cores, args.rounds,
                                               args.repetitions, run, log)
    data = {"environment": environment(), "machine_check": problems, "cores": cores, "rounds": args.rounds,
            "builds": {"llama.cpp": mainline.name, "ik_llama.cpp": ik.name}, "bandwidth": bandwidth, "models": results}
    write_report("engines", data, engines_bench.markdown(data))


def build(args):
    problems = machine.check_machine([], args.force, log)
    build_class, cmake_args = controller_build_class()
    variants = {}
    for label, klass, flags in (("role-" + build_class, build_class, cmake_args),
                                ("role-x86-avx2 (the lab's class)", "x86-avx2", None)):
        if label in variants or (flags is None and klass == build_class):
            continue
        if flags is None:  # the lab's class, with the flags host_facts gives an AVX2 host
            flags = ["-DGGML_NATIVE=OFF", "-DGGML_AVX=ON", "-DGGML_AVX2=ON", "-DGGML_FMA=ON", "-DGGML_F16C=ON",
                     "-DGGML_BMI2=ON", "-DGGML_AVX512=OFF"]
        python, dummy_directory, build = role_install(klass, flags)
        variants[label] = {"python": python, "build_seconds": build["seconds"] if build["built"] else None,
                           "cmake_args": flags, "install_seconds": build["install_seconds"]}
    plain_args = ["--no-cache-dir", "llama-cpp-python==" + LLAMA_VERSION]
    python, install_s = venv_with("plain-pip", plain_args)
    variants["plain pip install"] = {"python": python, "install_seconds": install_s,
                                     "cmake_args": "llama.cpp defaults (GGML_NATIVE=ON: -march=native)"}
    model = q8_model(next(iter(variants.values()))["python"])
    bandwidth = json.loads(run([sys.executable, REPO / "benchmarks" / "build" / "copy_bandwidth.py"],
                               stdout=subprocess.PIPE, text=True).stdout)
    model_bytes = model.stat().st_size
    bound = bandwidth["bytes_per_second"] / model_bytes
    results = {label: {"rates_by_threads": {}} for label in variants}
    for dummy_round in range(args.rounds):
        for threads in args.threads:
            for label, variant in variants.items():
                out = json.loads(run([variant["python"], REPO / "benchmarks" / "build" / "generation_rate.py", model,
                                      threads, args.tokens, args.repeats], stdout=subprocess.PIPE, text=True).stdout)
                results[label]["system_info"] = out["system_info"]
                results[label]["rates_by_threads"].setdefault(str(threads), []).extend(out["rates"])
    for label, result in results.items():
        result.update({k: v for k, v in variants[label].items() if k != "python"})
        result["median_by_threads"] = {t: round(statistics.median(r), 2) for t, r in result["rates_by_threads"].items()}
        result["achieved_over_bound"] = {t: round(m / bound, 3) for t, m in result["median_by_threads"].items()}
    data = {"environment": environment(), "machine_check": problems, "model": model.name, "model_bytes": model_bytes, "bandwidth": bandwidth,
            "bound_tokens_per_second": round(bound, 2), "rounds": args.rounds, "tokens": args.tokens,
            "repeats": args.repeats, "variants": results}
    write_report("build", data, build_markdown(data))


def build_markdown(data):
    env = data["environment"]
    lines = ["# Build quality: the role's wheel vs a plain pip install", "",
             "Native run on the controller (%s, %s CPUs), not in a VM. Command: `%s` (%s, commit %s)." % (
                 env["controller_cpu"], env["controller_cpus"], env["command"], env["date"], env["commit"]), "",
             "Model %s, %.0f MB. Copy bandwidth %.1f GB/s (%d threads, STREAM Copy: read + written), so the "
             "token-generation bound (every weight read once a token) is %.1f tokens/s." % (
                 data["model"], data["model_bytes"] / 1e6, data["bandwidth"]["bytes_per_second"] / 1e9,
                 data["bandwidth"]["threads"], data["bound_tokens_per_second"]), "",
             "| build | threads | tokens/s (median) | achieved / bound | all samples |", "|---|---|---|---|---|"]
    for label, result in data["variants"].items():
        for threads, median in result["median_by_threads"].items():
            samples = " ".join("%.1f" % r for r in result["rates_by_threads"][threads])
            ratio = result["achieved_over_bound"][threads]
            lines.append("| %s | %s | %.2f | %.2f | %s |" % (label, threads, median, ratio, samples))
    lines += ["", "System info per build (llama_print_system_info):", ""]
    lines += ["- %s: `%s`" % (label, r["system_info"].strip()) for label, r in data["variants"].items()]
    lines.append("")
    return "\n".join(lines)


RECAP = re.compile(r"^(\S+)\s+: ok=(\d+)\s+changed=(\d+)\s+unreachable=(\d+)\s+failed=(\d+)", re.M)
WHEEL_TASK = "TASK [cpuinfer.llm.llama_server : Build the engine once per CPU class"


def recap(output):
    return {m.group(1): {"ok": int(m.group(2)), "changed": int(m.group(3)), "unreachable": int(m.group(4)),
                         "failed": int(m.group(5))} for m in RECAP.finditer(output)}


def wheel_builds(output):
    """'changed' items of the role's build task: a wheel was compiled (a cache hit reports ok)."""
    if WHEEL_TASK not in output:
        return 0
    section = output.split(WHEEL_TASK, 1)[1].split("\nTASK [", 1)[0]
    return sum(1 for line in section.splitlines() if line.startswith("changed:"))


def converge(args):
    topology_path = REPO / "benchmarks" / "converge" / "topology.json"
    inventory = REPO / "benchmarks" / "converge" / "inventory"
    vms = json.loads(topology_path.read_text(encoding="utf-8"))["vms"]
    ensure_model("llama-tiny")
    problems = machine.check_machine([vm["name"] for vm in vms], args.force, log)
    extra = ["-e", "llama_server_build_cache=%s" % args.wheel_cache] if args.wheel_cache else []
    counts = sorted(set(int(c) for c in args.hosts.split(",")))
    runs = []
    for repeat in range(args.repeats):
        for count in counts:
            runs += converge_hosts(vms[:count], inventory, topology_path, extra, args, repeat)
            if not (args.keep and count == counts[-1] and repeat == args.repeats - 1):
                lab("down", *[vm["name"] for vm in vms[:count]])
    data = {"environment": environment(), "note": EMULATION_NOTE, "wheel_cache": args.wheel_cache or "the default",
            "playbook_env": PLAYBOOK_ENV, "repeats": args.repeats,
            "conditions": {"machine_check": problems, "pinned": args.pin},
            "reconverge_over_first": reconverge_ratios(runs), "runs": runs + carried_runs(counts)}
    write_report("converge", data, converge_markdown(data))


def converge_hosts(vms, inventory, topology_path, extra, args, repeat):
    """Boot `vms` fresh (pinned unless --no-pin), run site.yml twice on them; the two runs' figures."""
    names = [vm["name"] for vm in vms]
    lab("down", *names)
    started = time.monotonic()
    lab("up", "--specs", json.dumps(vms), *(["--pin"] if args.pin else []))
    boot_s = time.monotonic() - started
    lab("inventory", "--topology", topology_path, "--output", inventory / "hosts.yml")
    runs = []
    for attempt in ("first converge", "re-converge"):
        usage = {}
        seconds, output = playbook(inventory, "playbooks/site.yml", *extra, usage=usage)
        # the target check's play runs on localhost: only the lab hosts are counted
        hosts = {name: counts for name, counts in recap(output).items() if name != "localhost"}
        if sorted(hosts) != sorted(names) or any(h["failed"] or h["unreachable"] for h in hosts.values()):
            raise SystemExit("bench: %s on %s did not succeed: %s" % (attempt, names, hosts))
        runs.append({"hosts": len(vms), "run": attempt, "repeat": repeat, "seconds": round(seconds),
                     "boot_seconds": round(boot_s), "changed": sum(h["changed"] for h in hosts.values()),
                     "wheel_builds": wheel_builds(output), **usage})
        log("%d host(s), %s: %.0f s" % (len(vms), attempt, seconds))
    return runs


def reconverge_ratios(runs):
    """{host count: spread of re-converge seconds / first converge seconds over the repeats}."""
    ratios = {}
    for run_ in runs:
        if run_["run"] == "re-converge":
            first = next(r for r in runs if r["hosts"] == run_["hosts"] and r["repeat"] == run_["repeat"]
                         and r["run"] == "first converge")
            ratios.setdefault(str(run_["hosts"]), []).append(run_["seconds"] / first["seconds"])
    return {hosts: stats.spread(values) for hosts, values in ratios.items()}


def carried_runs(measured_counts):
    """The committed report's runs for host counts this run skipped (--hosts), marked with what measured them."""
    previous, origin = committed_report("converge")
    if previous is None:
        return []
    return [dict(run_, measured_by=run_.get("measured_by") or origin)
            for run_ in previous["runs"] if run_["hosts"] not in measured_counts]


def converge_markdown(data):
    env = data["environment"]
    lines = ["# Converge cost", "", data["note"], "",
             "Command: `%s` (%s, commit %s). playbooks/site.yml on fresh lab VMs (1 vCPU, 1.5 GiB each), "
             "wheel cache: %s; ansible-playbook with %s. Controller CPU: user + system seconds of "
             "ansible-playbook and all it ran on the controller." % (
                 env["command"], env["date"], env["commit"], data["wheel_cache"],
                 ", ".join("%s=%s" % item for item in sorted(data.get("playbook_env", {}).items())) or "Ansible's defaults"),
             "",
             "| hosts | repeat | run | wall s | x first converge | controller CPU s | tasks changed | wheel builds | measured |",
             "|---|---|---|---|---|---|---|---|---|"]
    runs = sorted(data["runs"], key=lambda run_: (run_["hosts"], run_.get("repeat", 0)))
    firsts = {(r["hosts"], r.get("repeat", 0)): r["seconds"] for r in runs if r["run"] == "first converge"}
    for r in runs:
        by = r.get("measured_by")
        when = "carried: `%s` (%s, commit %s)" % (by["command"], by["date"], by["commit"]) if by else "this run"
        key = (r["hosts"], r.get("repeat", 0))
        ratio = "%.2f" % (r["seconds"] / firsts[key]) if key in firsts else "-"
        cpu = "%.1f" % r["controller_cpu_seconds"] if "controller_cpu_seconds" in r else "-"
        lines.append("| %d | %d | %s | %d | %s | %s | %d | %d | %s |" % (
            r["hosts"], r.get("repeat", 0) + 1, r["run"], r["seconds"], ratio, cpu, r["changed"], r["wheel_builds"], when))
    if data.get("reconverge_over_first"):
        lines += ["", "Re-converge / first converge over the repeats of this run: median [min - max]:", ""]
        lines += ["- %s host(s): %.2f [%.2f - %.2f]" % (hosts, s["median"], s["min"], s["max"])
                  for hosts, s in sorted(data["reconverge_over_first"].items())]
    if data.get("conditions"):
        lines += ["", "Machine before the run: %s; VMs %s." % (
            "; ".join(data["conditions"]["machine_check"]) or "quiet (no other qemu, low load)",
            "pinned (scripts/lab up --pin: each VM's vCPU 0 on its own host CPU in turn)"
            if data["conditions"]["pinned"] else "not pinned")]
    lines.append("")
    return "\n".join(lines)


def slo(args):
    # the guest interleaves shared, static and controller runs `repeats` times itself (benchmarks/slo/slo_runner.py)
    sizes = {"bench_phase_seconds": args.phase_seconds, "bench_repeats": args.repeats}
    dummy_prepare, dummy_measure, raws, conditions = in_lab_vm("slo", sizes, args)
    raw = raws[0]
    data = {"environment": environment(), "note": EMULATION_NOTE, "slo_p99_ms": raw["slo_p99_ms"],
            "calibration_p99_ms": raw["calibration_p99_ms"], "phases": raw["phases"],
            "phase_seconds": raw["phase_seconds"], "repeats": args.repeats, "summary": slo_summary(raw),
            "conditions": conditions, "raw": raw}
    write_report("slo", data, slo_markdown(data))


# The SLO controller's goal (issue 37): >= 99 % of 10-s windows within the SLO, and best-effort work
# >= 2x the static split's
SLO_GOAL = {"windows_within": 0.99, "be_over_static": 2.0}


def slo_summary(raw):
    """Per mode, across repeats: share of windows within the SLO, LC tokens/s, BE bogo-ops/s per
    stressor, and BE work over the static split's of the same repeat."""
    summary = {}
    static = dict((run_["repeat"], run_["be_bogo_ops_per_second"]) for run_ in raw["runs"] if run_["mode"] == "static")
    for mode in ("shared", "static", "controller"):
        runs = [run_ for run_ in raw["runs"] if run_["mode"] == mode]
        within = [sum(1 for p99 in run_["window_p99_ms"] if p99 <= raw["slo_p99_ms"]) / len(run_["window_p99_ms"])
                  for run_ in runs]
        entry = {"windows_within": stats.spread(within),
                 "lc_tokens_per_second": stats.spread([run_["tokens"] / run_["seconds"] for run_ in runs]),
                 "be_bogo_ops_per_second": {}, "be_over_static": {}}
        for stressor in sorted(runs[0]["be_bogo_ops_per_second"]):
            entry["be_bogo_ops_per_second"][stressor] = stats.spread(
                [run_["be_bogo_ops_per_second"].get(stressor, 0.0) for run_ in runs])
            base = [static[run_["repeat"]].get(stressor) for run_ in runs]
            if all(base):
                entry["be_over_static"][stressor] = stats.spread(
                    [run_["be_bogo_ops_per_second"].get(stressor, 0.0) / b for run_, b in zip(runs, base)])
        if mode == "controller":
            entry["decisions"] = dict((action, sum(1 for run_ in runs for d in run_["decisions"] if d["action"] == action))
                                      for action in ("grow", "cut", "hold", "safe"))
            after = [d["after"] for run_ in runs for d in run_["decisions"] if "after" in d]
            if after:
                entry["lent_share"] = sum(1 for a in after if a["lent_cores"] > 0) / len(after)
        summary[mode] = entry
    if raw.get("config"):
        summary["ceiling"] = slo_ceiling(raw["config"])
    return summary


def slo_ceiling(config):
    """The most CPUs best-effort work may run on under the controller against the static split's
    (its own CPUs): the controller's own limits from its configuration."""
    # the agent's package and the collection as the playbooks see it (benchmarks/run links it there)
    for path in (REPO / "agent", REPO / ".build" / "collections"):
        if str(path) not in sys.path:
            sys.path.insert(0, str(path))
    from cpuinfer_agent.slo_controller import limits_of
    limits = limits_of(config)
    lendable = len(limits.lendable_cores)
    return {"base_cpus": limits.base_cpus, "lendable_cpus": limits.cpus(lendable) - limits.base_cpus,
            "be_over_static_max": limits.cpus(lendable) / limits.base_cpus,
            "min_percent": limits.min_percent, "step_percent": limits.step_percent}


def slo_markdown(data):
    env = data["environment"]
    phases = ", ".join("%s (%d client%s%s)" % (p["name"], p["clients"], "s" if p["clients"] > 1 else "",
                                               ", %.0f s pause between streams" % p["pause_s"] if p["pause_s"] else "")
                       for p in data["phases"])
    lines = ["# SLO controller: best-effort work squeezed, the service left alone", "", data["note"], "",
             "Command: `%s` (%s, commit %s)." % (env["command"], env["date"], env["commit"]), "",
             "2-vCPU VM (benchmarks/slo/topology.json): the service (llama-bench, 2 slots) on the inference CPU, "
             "best-effort work `stress-ng --cpu 2 --stream 1` beside it. Client load per mode: %s, %d s each. "
             "SLO = 1.25 x the service's p99 inter-token gap alone under the busy load = %.1f ms (alone: %.1f ms). "
             "Modes interleaved, %d repeats: shared (best-effort work in a slice of its own, default weight, every "
             "CPU), static (host_tuning's best-effort slice: the housekeeping CPU, cpu.idle, no quota), "
             "controller (that slice moved by cpuinfer-slo-controller)." % (
                 phases, data["phase_seconds"], data["slo_p99_ms"], data["calibration_p99_ms"], data["repeats"]), "",
             "| mode | 10-s windows within SLO, median [per repeat] | LC tokens/s | BE cpu bogo-ops/s "
             "| BE stream bogo-ops/s | BE cpu / static | BE stream / static |",
             "|---|---|---|---|---|---|---|"]

    def figure(spread_, fmt="%.2f"):
        if not spread_:
            return "-"
        return (fmt + " [%s]") % (spread_["median"], " ".join(fmt % v for v in spread_["per_repeat"]))
    for mode, entry in ((m, data["summary"][m]) for m in ("shared", "static", "controller")):
        be, over = entry["be_bogo_ops_per_second"], entry["be_over_static"]
        lines.append("| %s | %s | %s | %s | %s | %s | %s |" % (
            mode, figure(entry["windows_within"]), figure(entry["lc_tokens_per_second"], "%.1f"),
            figure(be.get("cpu"), "%.1f"), figure(be.get("stream"), "%.1f"), figure(over.get("cpu")),
            figure(over.get("stream"))))
    controller = data["summary"]["controller"]
    met_windows = controller["windows_within"]["median"] >= SLO_GOAL["windows_within"]
    met_work = all(v["median"] >= SLO_GOAL["be_over_static"] for v in controller["be_over_static"].values()) \
        and bool(controller["be_over_static"])
    ceiling = data["summary"].get("ceiling")
    if ceiling:
        lines += ["", "What this VM allows: under the controller best-effort work may run on at most %d CPU(s) against "
                  "the static split's %d (ceiling %.1fx), and on a lent core only in the time the service leaves idle "
                  "(the slice runs cpu.idle there): the ceiling needs the service idle all run long. The controller had a "
                  "core lent in %.0f %% of its windows. It starts at its safe minimum (%d %%) at every start - here at each "
                  "controller run - and grows %d %% a window up to its own CPU." % (
                      ceiling["base_cpus"] + ceiling["lendable_cpus"], ceiling["base_cpus"],
                      ceiling["be_over_static_max"], 100 * controller.get("lent_share", 0.0), ceiling["min_percent"],
                      ceiling["step_percent"])]
    lines += ["", "Goal (controller: >= %d %% of windows within the SLO and best-effort work >= %.0fx the static "
              "split's): windows %s, work %s." % (SLO_GOAL["windows_within"] * 100, SLO_GOAL["be_over_static"],
                                                  "met" if met_windows else "not met", "met" if met_work else "not met"),
              "", "Controller decisions over all repeats: %s." % ", ".join(
                  "%s %d" % item for item in controller.get("decisions", {}).items())]
    lines += machine.conditions_markdown(data.get("conditions"))
    lines.append("")
    return "\n".join(lines)


CONCURRENCY_SLOTS = 8


def native_servers(python, directory, model, threads, n_ctx):
    """llama-server and the Python server of one role build (directory, its venv's python), on loopback."""
    common = ["--host", "127.0.0.1"]
    return {
        "llama-server": [directory / "engine" / "llama-server", "--model", model, "--port", "18091", *common,
                         "--threads", threads, "--threads-batch", threads, "--parallel", CONCURRENCY_SLOTS,
                         "--ctx-size", n_ctx * CONCURRENCY_SLOTS, "--no-webui"],
        "llama-cpp-python": [python, "-m", "llama_cpp.server", "--model", model, "--port", "18092", *common,
                             "--n_threads", threads, "--n_threads_batch", threads, "--n_ctx", n_ctx,
                             "--logits_all", "False", "--verbose", "False", "--interrupt_requests", "False"],
    }


def wait_listening(port, seconds=120):
    import socket
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        with socket.socket() as probe:
            if probe.connect_ex(("127.0.0.1", port)) == 0:
                return
        time.sleep(0.5)
    raise SystemExit("bench: nothing listens on 127.0.0.1:%d" % port)


def concurrency_native(args, python, directory, model):
    commands = native_servers(python, directory, model, args.threads, args.n_ctx)
    processes = [subprocess.Popen([str(a) for a in argv], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
                 for argv in commands.values()]
    try:
        for port in (18091, 18092):
            wait_listening(port)
        config = BENCH_BUILD / "concurrency-native.json"
        config.write_text(json.dumps({"servers": {"llama-server": 18091, "llama-cpp-python": 18092},
                                      "clients": args.clients, "rounds": args.rounds, "tokens": args.tokens}))
        out = run([sys.executable, REPO / "benchmarks" / "concurrency" / "load.py", config], stdout=subprocess.PIPE,
                  text=True, env=dict(os.environ, PYTHONPATH=str(REPO / "roles" / "health_gate" / "files"))).stdout
    finally:
        for process in processes:
            process.terminate()
            process.wait(timeout=30)
    return json.loads(out)["trials"]


VM_MODEL = "llama-bench"  # pinned by sha256 in benchmarks/concurrency/inventory; software emulation is slow


def concurrency_vm(args):
    topology = REPO / "benchmarks" / "concurrency" / "topology.json"
    inventory = REPO / "benchmarks" / "concurrency" / "inventory"
    ensure_model(VM_MODEL)
    if not args.reuse:
        lab("up", "--topology", topology)
    try:
        lab("inventory", "--topology", topology, "--output", inventory / "hosts.yml")
        playbook(inventory, "benchmarks/concurrency/prepare.yml")
        playbook(inventory, "benchmarks/concurrency/measure.yml", "-e", json.dumps(
            {"bench_clients": args.clients, "bench_rounds": args.vm_rounds, "bench_tokens": args.vm_tokens}))
    finally:
        if not args.keep:
            lab("down", *[vm["name"] for vm in json.loads(topology.read_text(encoding="utf-8"))["vms"]])
    return json.loads((REPO / ".build" / "bench-concurrency-raw.json").read_text(encoding="utf-8"))["trials"]


def concurrency(args):
    topology = json.loads((REPO / "benchmarks" / "concurrency" / "topology.json").read_text(encoding="utf-8"))
    problems = machine.check_machine([vm["name"] for vm in topology["vms"]], args.force, log)
    places = {}
    if not args.skip_native:
        python, directory, build = role_install(*controller_build_class())
        model = q8_model(python)
        trials = concurrency_native(args, python, directory, model)
        places["controller (native)"] = {"model": model.name, "threads": args.threads, "tokens": args.tokens,
                                         "rounds": args.rounds, "build": build["key"], "trials": trials}
    if not args.skip_vm:
        trials = concurrency_vm(args)
        places["lab VM (TCG, 2 vCPUs)"] = {"model": VM_MODEL, "threads": 2, "tokens": args.vm_tokens,
                                           "rounds": args.vm_rounds, "trials": trials}
    for place in places.values():
        place["summary"] = stats.summarize_concurrency(place["trials"])
        place["goal_4_clients"] = {server: stats.concurrency_goal(place["summary"], server)
                                   for server in place["summary"] if "4" in place["summary"][server]}
    places = dict(carried_places("concurrency", places), **places)
    data = {"environment": environment(), "machine_check": problems, "note": EMULATION_NOTE, "slots": CONCURRENCY_SLOTS, "places": places}
    write_report("concurrency", data, concurrency_markdown(data))


def concurrency_markdown(data):
    env = data["environment"]
    lines = ["# Concurrent clients: llama-server vs the Python server", "",
             "Command: `%s` (%s, commit %s, controller: %s, %s CPUs)." % (
                 env["command"], env["date"], env["commit"], env["controller_cpu"], env["controller_cpus"]), "",
             "Both engines from the same role build (one llama.cpp), same model, same threads; llama-server with "
             "%d slots. Interleaved: every round runs every client count against both servers, one trial at a time. "
             "Aggregate tokens/s = all streams' tokens / the trial's wall time (first request to last end). "
             "Goal (issue 15): with 4 clients llama-server delivers >= 2.5x the aggregate tokens/s of 1 client, "
             "with p99 inter-token <= 2x the 1-client p99." % data["slots"], ""]
    for place, result in data["places"].items():
        origin = result.get("measured_by")
        lines += ["## %s" % place, "", "Model %s, %s threads, %d tokens per stream, %d rounds.%s" % (
            result["model"], result["threads"], result["tokens"], result["rounds"],
            " Measured earlier: `%s` (%s, commit %s)." % (origin["command"], origin["date"], origin["commit"])
            if origin else ""), "",
            "| server | clients | aggregate tok/s (median) | per round | per-stream tok/s | TTFT p50 / p99 ms | "
            "inter-token p50 / p99 ms |", "|---|---|---|---|---|---|---|"]
        for server, by_clients in result["summary"].items():
            for clients, s in sorted(by_clients.items(), key=lambda item: int(item[0])):
                lines.append("| %s | %s | %.2f | %s | %.2f | %s / %s | %s / %s |" % (
                    server, clients, s["aggregate_tokens_per_second_median"],
                    " ".join("%.2f" % a for a in s["aggregate_tokens_per_second_per_round"]),
                    s["per_stream_tokens_per_second_median"], s["first_token_p50_ms"], s["first_token_p99_ms"],
                    s["inter_token_p50_ms"], s["inter_token_p99_ms"]))
        lines += [""] + ["- %s, 4 clients vs 1: aggregate %.2fx, p99 inter-token %sx: goal %s" % (
            server, goal["aggregate_speedup"], goal["inter_token_p99_ratio"], "met" if goal["met"] else "NOT met")
            for server, goal in result["goal_4_clients"].items()] + [""]
    return "\n".join(lines)


def cores(args):
    problems = machine.check_machine([], args.force, log)
    samples = host_cores.measure(args.rounds, args.seconds, log=log)
    data = {"environment": environment(), "rounds": args.rounds, "seconds": args.seconds, "measured_cpu": 1,
            "other_cpu": 0, "machine_check": problems, "summary": host_cores.summarize(samples), "samples": samples}
    write_report("host-cores", data, host_cores.markdown(data))


def lab_forwarded(vm_name, guest_port):
    state = Path(os.environ.get("CPUINFER_LAB_STATE", "/var/lib/cpuinfer-lab"))
    return json.loads((state / "vms" / vm_name / "vm.json").read_text(encoding="utf-8"))["forwarded"][str(guest_port)]


def rollout_variant(variant, repeat, weight, inventory, args):
    """One rollout of every instance under the load, through the variant's address; what each request saw."""
    if variant["address"] == "frontdoor":
        port = lab_forwarded("bench-roll-1", 9081)
    else:
        port = lab_forwarded("bench-roll-2", 8081)
    url = "http://127.0.0.1:%d/v1" % port
    scratch = REPO / ".build" / "bench-rollout"
    scratch.mkdir(parents=True, exist_ok=True)
    stop, phase = scratch / "stop", scratch / "phase"
    stop.unlink(missing_ok=True)
    phase.write_text("steady\n", encoding="utf-8")
    log("rollout: %s (repeat %d) through %s" % (variant["name"], repeat + 1, url))
    load = subprocess.Popen([sys.executable, REPO / "benchmarks" / "rollout" / "load.py", "--base-url", url,
                             "--model", "tiny-llama", "--api-key", "bench-key-0123456789abcdef",
                             "--tokens", str(args.tokens), "--interval", str(args.interval), "--stop-file", stop,
                             "--phase-file", phase], stdout=subprocess.PIPE, text=True)
    try:
        time.sleep(args.steady_seconds)
        phase.write_text("rollout\n", encoding="utf-8")
        seconds, dummy_output = playbook(inventory, "playbooks/canary.yml", "-e",
                                         json.dumps(rollout_bench.extra_vars(variant, weight)))
        phase.write_text("after\n", encoding="utf-8")
        time.sleep(args.after_seconds)
    finally:
        stop.write_text("", encoding="utf-8")
        output, dummy_errors = load.communicate(timeout=900)
    measured = json.loads(output)
    log("rollout: %s: %s" % (variant["name"], measured["summary"]))
    return {"variant": variant["name"], "repeat": repeat, "rollout_seconds": round(seconds), **measured}


def rollout(args):
    topology = REPO / "benchmarks" / "rollout" / "topology.json"
    inventory = REPO / "benchmarks" / "rollout" / "inventory"
    vm_names = [vm["name"] for vm in json.loads(topology.read_text(encoding="utf-8"))["vms"]]
    problems = machine.check_machine(vm_names, args.force, log)
    ensure_model("llama-tiny")
    if not args.reuse:
        lab("up", "--topology", topology)
    runs = []
    try:
        lab("inventory", "--topology", topology, "--output", inventory / "hosts.yml")
        playbook(inventory, "playbooks/site.yml")
        schedule = rollout_bench.weights(list(rollout_bench.VARIANTS) * args.repeats)
        for repeat in range(args.repeats):
            for variant in rollout_bench.VARIANTS:
                # a rollout that restarts flips every unit's CPUWeight, so every instance restarts
                runs.append(rollout_variant(variant, repeat, schedule[len(runs)], inventory, args))
    finally:
        if not args.keep:
            lab("down", *vm_names)
    data = {"environment": environment(), "tokens": args.tokens, "interval": args.interval,
            "steady_seconds": args.steady_seconds, "after_seconds": args.after_seconds, "machine_check": problems,
            "runs": runs}
    write_report("rollout", data, rollout_bench.markdown(data))


def main():
    top = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = top.add_subparsers(dest="benchmark", required=True)
    p = sub.add_parser("isolation")
    p.add_argument("--rounds", type=int, default=4)
    p.add_argument("--completions", type=int, default=2)
    p.add_argument("--tokens", type=int, default=32)
    p.add_argument("--keep", action="store_true", help="leave the VM running")
    p.add_argument("--reuse", action="store_true", help="use the VM a --keep run left running")
    p.add_argument("--report", default="isolation",
                   help="write docs/benchmarks/REPORT.{json,md} (a second run beside the first, to compare them)")
    p.add_argument("--from-samples", action="store_true",
                   help="measure nothing: recompute REPORT from the samples it holds (after a change of the summaries)")
    machine.add_options(p, repeats=3)
    p.set_defaults(func=isolation)
    p = sub.add_parser("build")
    p.add_argument("--rounds", type=int, default=5)
    p.add_argument("--threads", type=int, nargs="+", default=[1, 2])
    p.add_argument("--tokens", type=int, default=64)
    p.add_argument("--repeats", type=int, default=2)
    p.add_argument("--force", action="store_true", help="measure even when the machine is busy (recorded)")
    p.set_defaults(func=build)
    p = sub.add_parser("slo")
    p.add_argument("--phase-seconds", type=int, default=30)
    p.add_argument("--keep", action="store_true", help="leave the VM running")
    p.add_argument("--reuse", action="store_true", help="use the VM a --keep run left running")
    machine.add_options(p, repeats=3)
    p.set_defaults(func=slo)
    p = sub.add_parser("converge")
    p.add_argument("--wheel-cache", help="a wheel cache directory (an empty one counts the builds of a cold run)")
    p.add_argument("--keep", action="store_true", help="leave the last converged VMs running")
    p.add_argument("--hosts", default="1,3", help="host counts to measure (1,3); the others are carried from the committed report")
    machine.add_options(p, repeats=3)
    p.set_defaults(func=converge)
    p = sub.add_parser("concurrency")
    p.add_argument("--clients", type=int, nargs="+", default=[1, 2, 4, 8])
    p.add_argument("--rounds", type=int, default=3)
    p.add_argument("--tokens", type=int, default=32)
    p.add_argument("--threads", type=int, default=2)
    p.add_argument("--n-ctx", type=int, default=256, help="context per slot")
    p.add_argument("--vm-rounds", type=int, default=2)
    p.add_argument("--vm-tokens", type=int, default=16)
    p.add_argument("--skip-native", action="store_true")
    p.add_argument("--skip-vm", action="store_true")
    p.add_argument("--keep", action="store_true", help="leave the VM running")
    p.add_argument("--reuse", action="store_true", help="use the VM a --keep run left running")
    p.add_argument("--force", action="store_true", help="measure even when the machine is busy (recorded)")
    p.set_defaults(func=concurrency)
    p = sub.add_parser("engines")
    p.add_argument("--models", nargs="+", default=["llama-250m:Q8_0", "deepseek2-lite-bench:Q8_0", "deepseek2-lite-bench:Q4_K_M"])
    p.add_argument("--rounds", type=int, default=3)
    p.add_argument("--repetitions", type=int, default=3, help="llama-bench repetitions in the calibration")
    p.add_argument("--force", action="store_true")
    p.set_defaults(func=engines)
    p = sub.add_parser("nohz")
    p.add_argument("--completions", type=int, default=6)
    p.add_argument("--tokens", type=int, default=48)
    p.add_argument("--keep", action="store_true", help="leave the VM running")
    p.add_argument("--reuse", action="store_true", help="use the VM a --keep run left running")
    machine.add_options(p, repeats=3)
    p.set_defaults(func=nohz)
    p = sub.add_parser("cores")
    p.add_argument("--rounds", type=int, default=5)
    p.add_argument("--seconds", type=int, default=5, help="per measurement")
    p.add_argument("--force", action="store_true", help="measure even when the machine is busy (recorded)")
    p.set_defaults(func=cores)
    p = sub.add_parser("rollout")
    p.add_argument("--repeats", type=int, default=1, help="rounds of the four variants")
    p.add_argument("--tokens", type=int, default=32)
    p.add_argument("--interval", type=float, default=1.0, help="seconds between request starts (open loop)")
    p.add_argument("--steady-seconds", type=int, default=30)
    p.add_argument("--after-seconds", type=int, default=15)
    p.add_argument("--keep", action="store_true", help="leave the VMs running")
    p.add_argument("--reuse", action="store_true", help="use the VMs a --keep run left running")
    p.add_argument("--force", action="store_true", help="measure even when the machine is busy (recorded)")
    p.set_defaults(func=rollout)
    args = top.parse_args()
    args.func(args)


if __name__ == "__main__":
    main()
