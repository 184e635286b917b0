# Copyright: cpuinfer.llm contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Build the inference engine once per CPU class on the controller, from the pinned
llama-cpp-python source, into one archive that hosts unpack and use offline.

One compile serves both engines: llama.cpp's own `llama-server` and the shared libraries
(libllama, libggml*) come from one CMake build of the llama.cpp tree that the llama-cpp-python
sdist vendors; the llama-cpp-python wheel is built without compiling (LLAMA_BUILD=OFF) and the
hosts put those same libraries into its package. One pin, one llama.cpp, one compile per class.

Cache (--cache):
  sources/llama_cpp_python-VERSION.tar.gz   the sdist, fetched once per version with pip
  KEY/        wheel, deps/ (the server extra's wheels for the hosts), engine/ (llama-server, lib*.so),
              manifest.json
  KEY.tar.gz  the same, one archive to ship: one transfer and one unpack per host
  KEY.build.log
KEY = VERSION-CLASS-hash(CMake arguments, dependency pins, this builder's BUILDER_VERSION).

Prints one JSON object: {"key", "archive", "built", "manifest"}. With --plan (check mode) nothing is
built: "built" says whether a real run would build, "archive" is null until it exists.
"""

import argparse
import fcntl
import hashlib
import json
import os
import platform
import shutil
import subprocess
import sys
import tarfile
import tempfile
import zipfile

# Bump when a change here changes what lands in the archive.
BUILDER_VERSION = 2
ENGINE_TARGET = "llama-server"
# llama.cpp's tree as the engine needs it: shared libraries for the Python package, no tests or
# examples, nothing fetched at build time (the prebuilt web UI comes from a download), no TLS in
# the server (a proxy in front terminates it), libraries found beside the binary ($ORIGIN).
ENGINE_CMAKE_ARGS = [
    "-DCMAKE_BUILD_TYPE=Release", "-DBUILD_SHARED_LIBS=ON", "-DCMAKE_BUILD_RPATH_USE_ORIGIN=ON",
    "-DLLAMA_BUILD_TOOLS=ON", "-DLLAMA_BUILD_SERVER=ON", "-DLLAMA_BUILD_TESTS=OFF", "-DLLAMA_BUILD_EXAMPLES=OFF",
    "-DLLAMA_BUILD_APP=OFF", "-DLLAMA_BUILD_UI=OFF", "-DLLAMA_USE_PREBUILT_UI=OFF", "-DLLAMA_CURL=OFF",
    "-DLLAMA_OPENSSL=OFF",
]
# The Python package without its own compile: the hosts give it the engine's libraries.
WHEEL_CMAKE_ARGS = ["-DLLAMA_BUILD=OFF", "-DLLAVA_BUILD=OFF"]


def cache_key(version, build_class, cmake_args, constraints):
    pins = open(constraints, encoding="utf-8").read() if constraints else ""
    material = [version, build_class, pins, "builder %d" % BUILDER_VERSION] + sorted(cmake_args)
    return "%s-%s-%s" % (version, build_class, hashlib.sha256("\n".join(material).encode()).hexdigest()[:12])


def engine_configure_argv(source, build_dir, class_args):
    return ["cmake", "-S", os.path.join(source, "vendor", "llama.cpp"), "-B", build_dir, "-G", "Ninja"] \
        + ENGINE_CMAKE_ARGS + list(class_args)


def requirements_of(wheel, extra):
    """Requires-Dist of the wheel, base and the given extra, markers dropped where they match."""
    with zipfile.ZipFile(wheel) as archive:
        name = next(n for n in archive.namelist() if n.endswith(".dist-info/METADATA"))
        metadata = archive.read(name).decode()
    found = []
    for line in metadata.splitlines():
        if not line.startswith("Requires-Dist:"):
            continue
        requirement, _sep, marker = line.split(":", 1)[1].strip().partition(";")
        marker = marker.strip()
        if not marker or marker.replace(" ", "") in ('extra=="%s"' % extra, "extra=='%s'" % extra):
            found.append(requirement.strip())
    return found


def platform_tags(machine, glibc):
    major, minor = (int(x) for x in glibc.split("."))
    tags = ["manylinux_%d_%d_%s" % (major, m, machine) for m in range(17, minor + 1)]
    return tags + ["manylinux2014_%s" % machine, "linux_%s" % machine]


def _run(argv, log, env=None, cwd=None):
    log.write("$ %s\n" % " ".join(argv))
    log.flush()
    subprocess.run(argv, env=env, cwd=cwd, check=True, stdout=log, stderr=subprocess.STDOUT)


def fetch_source(cache, version, log):
    """The sdist of llama-cpp-python, once per version (pip, so the user's index settings apply)."""
    sources = os.path.join(cache, "sources")
    sdist = os.path.join(sources, "llama_cpp_python-%s.tar.gz" % version)
    if not os.path.exists(sdist):
        download = tempfile.mkdtemp(prefix="sdist-", dir=cache)
        _run([sys.executable, "-m", "pip", "download", "--no-deps", "--no-binary", "llama-cpp-python",
              "-d", download, "llama-cpp-python==%s" % version], log)
        os.makedirs(sources, exist_ok=True)
        os.rename(os.path.join(download, os.path.basename(sdist)), sdist)
        shutil.rmtree(download)
    return sdist


def build_engine(source, work, class_args, log, env):
    """llama-server and the shared libraries, into work/engine."""
    build_dir = os.path.join(work, "build")
    _run(engine_configure_argv(source, build_dir, class_args), log, env)
    _run(["cmake", "--build", build_dir, "--target", ENGINE_TARGET, "--parallel", str(os.cpu_count() or 1)], log, env)
    binaries = os.path.join(build_dir, "bin")
    engine = os.path.join(work, "engine")
    os.makedirs(engine)
    for name in sorted(os.listdir(binaries)):
        if name == ENGINE_TARGET or ".so" in name:
            # symlinks stay links (libllama.so -> libllama.so.0 ...): the loader needs each name once
            path = os.path.join(binaries, name)
            if os.path.islink(path):
                os.symlink(os.readlink(path), os.path.join(engine, name))
            else:
                shutil.copy2(path, os.path.join(engine, name))
    return engine


def build_wheel_and_deps(sdist, work, args, log, env):
    """The library-free llama-cpp-python wheel, and the server extra's dependencies for the hosts."""
    wheel_env = dict(env, CMAKE_ARGS=" ".join(WHEEL_CMAKE_ARGS))
    _run([sys.executable, "-m", "pip", "wheel", "--no-deps", "--no-cache-dir", "-w", work, sdist], log, wheel_env)
    wheel = next(os.path.join(work, n) for n in os.listdir(work) if n.endswith(".whl"))
    command = [sys.executable, "-m", "pip", "download", "--only-binary=:all:", "--python-version", args.python_version,
               "--implementation", "cp", "-d", os.path.join(work, "deps")]
    for tag in platform_tags(args.machine, args.glibc):
        command += ["--platform", tag]
    if args.constraints:
        command += ["-c", args.constraints]
    _run(command + requirements_of(wheel, "server"), log)
    return wheel


def pack(work, target, key):
    """KEY/ and KEY.tar.gz, both renamed into place last: a reader never sees half of either."""
    archive = target + ".tar.gz"
    partial = archive + ".partial"
    with tarfile.open(partial, "w:gz", compresslevel=1) as tar:
        tar.add(work, arcname=key)
    os.chmod(work, 0o755)
    os.rename(work, target)
    os.rename(partial, archive)
    return archive


def build(args, key, target, log):
    env = dict(os.environ)
    env.pop("SOURCE_DATE_EPOCH", None)  # it turns every ISA flag off in llama.cpp's build
    env["CMAKE_BUILD_PARALLEL_LEVEL"] = str(os.cpu_count() or 1)
    sdist = fetch_source(args.cache, args.version, log)
    scratch = tempfile.mkdtemp(prefix="llama-build-", dir=args.cache)
    try:
        work = os.path.join(scratch, key)
        os.makedirs(work)
        with tarfile.open(sdist) as tar:
            # the data filter refuses links out of the tree; Pythons before 3.11.4 lack it
            safe = {"filter": "data"} if hasattr(tarfile, "data_filter") else {}
            tar.extractall(scratch, **safe)  # nosec: our own pinned sdist
        source = os.path.join(scratch, "llama_cpp_python-%s" % args.version)
        log.write("building %s for %s: %s\n" % (ENGINE_TARGET, args.build_class, " ".join(args.cmake_arg)))
        build_engine(source, work, args.cmake_arg, log, env)
        shutil.rmtree(os.path.join(work, "build"), ignore_errors=True)
        wheel = build_wheel_and_deps(sdist, work, args, log, env)
        manifest = {"key": key, "version": args.version, "build_class": args.build_class,
                    "cmake_args": ENGINE_CMAKE_ARGS + args.cmake_arg, "machine": args.machine,
                    "wheel": os.path.basename(wheel), "engine": "engine/" + ENGINE_TARGET,
                    "libraries": sorted(n for n in os.listdir(os.path.join(work, "engine")) if ".so" in n)}
        with open(os.path.join(work, "manifest.json"), "w", encoding="utf-8") as handle:
            json.dump(manifest, handle, indent=1, sort_keys=True)
        return pack(work, target, key)
    finally:
        shutil.rmtree(scratch, ignore_errors=True)


def report(key, target, built):
    archive = target + ".tar.gz"
    manifest = None
    if os.path.exists(os.path.join(target, "manifest.json")):
        with open(os.path.join(target, "manifest.json"), encoding="utf-8") as handle:
            manifest = json.load(handle)
    return {"key": key, "archive": archive if os.path.exists(archive) else None, "built": built, "manifest": manifest}


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--version", required=True)
    parser.add_argument("--build-class", required=True)
    parser.add_argument("--cmake-arg", action="append", default=[])
    parser.add_argument("--cache", required=True)
    parser.add_argument("--machine", required=True, help="the hosts' machine, e.g. x86_64")
    parser.add_argument("--python-version", required=True, help="the hosts' Python, e.g. 3.11")
    parser.add_argument("--glibc", required=True, help="the hosts' glibc, e.g. 2.36")
    parser.add_argument("--constraints")
    parser.add_argument("--plan", action="store_true", help="say what a real run would do; build nothing")
    args = parser.parse_args()

    key = cache_key(args.version, args.build_class, args.cmake_arg, args.constraints)
    target = os.path.join(args.cache, key)
    if args.plan:
        print(json.dumps(report(key, target, not os.path.exists(target + ".tar.gz"))))
        return 0
    if args.machine != platform.machine():
        sys.stderr.write("this controller is %s and cannot build for %s hosts: preload the cache with a build "
                         "made on a %s machine\n" % (platform.machine(), args.machine, args.machine))
        return 2
    os.makedirs(args.cache, exist_ok=True)
    with open(os.path.join(args.cache, ".lock-" + key), "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)  # concurrent runs for one key wait for one build
        built = not os.path.exists(target + ".tar.gz")
        if built:
            shutil.rmtree(target, ignore_errors=True)
            with open(os.path.join(args.cache, key + ".build.log"), "w") as log:
                try:
                    build(args, key, target, log)
                except (subprocess.CalledProcessError, OSError, StopIteration) as exc:
                    sys.stderr.write("build of %s failed (%s); log: %s\n" % (key, exc, log.name))
                    return 1
    print(json.dumps(report(key, target, built)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
