"""The engine builds the benchmarks run: exactly the role's (same script, arguments and cache) for a host
like this machine, installed into venvs under .build/bench-build, and the quantised models they serve."""

import json
import platform
import subprocess
import sys
import time
from pathlib import Path

from common import MODELS, REPO, ensure_model, role_default, run

BENCH_BUILD = REPO / ".build" / "bench-build"
# the releases the role builds (its defaults), so the benchmarks measure what hosts get
VERSIONS = {"llama.cpp": role_default("llama_server", "llama_server_version"),
            "ik_llama.cpp": role_default("llama_server", "llama_server_ik_version")}


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
    version = VERSIONS[source]
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
