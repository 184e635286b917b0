"""The role-built wheel vs a plain `pip install llama-cpp-python`, on this machine.

Both against the memory-bandwidth bound of token generation (benchmarks/build/)."""

import json
import statistics
import subprocess
import sys

import machine
from common import REPO, add_force, environment, log, run, run_line, write_report
from engine_builds import VERSIONS, controller_build_class, q8_model, role_install, venv_with


def add_arguments(parser):
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--threads", type=int, nargs="+", default=[1, 2])
    parser.add_argument("--tokens", type=int, default=64)
    parser.add_argument("--repeats", type=int, default=2)
    add_force(parser)


def main(args):
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
    plain_args = ["--no-cache-dir", "llama-cpp-python==" + VERSIONS["llama.cpp"]]
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
    write_report("build", data, markdown(data))


def markdown(data):
    env = data["environment"]
    lines = ["# Build quality: the role's wheel vs a plain pip install", "",
             run_line(env, "; natively on the controller, not in a VM"), "",
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
