# Copyright: cpuinfer.llm contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Build llama-cpp-python once per CPU class on the controller, and fetch its dependencies as
wheels for the hosts, so that hosts install offline and never compile.

Prints one JSON object: {"wheel": path, "deps": dir, "built": bool, "key": cache key}. With --plan
(check mode) nothing is built: "built" says whether a real run would build, "wheel" is null then.
The cache is keyed by (version, build class, CMake arguments); a lock makes concurrent runs for
the same key wait for one build instead of building twice.
"""

import argparse
import fcntl
import hashlib
import json
import os
import platform
import subprocess
import sys
import tempfile
import zipfile

FIXED_CMAKE_ARGS = ["-DLLAVA_BUILD=OFF"]  # the multimodal helper is not served; it doubles the build


def cache_key(version, build_class, cmake_args, constraints):
    pins = open(constraints, encoding="utf-8").read() if constraints else ""
    digest = hashlib.sha256("\n".join([version, build_class, pins] + sorted(cmake_args)).encode()).hexdigest()[:12]
    return "%s-%s-%s" % (version, build_class, digest)


def requirements_of(wheel, extra):
    """Requires-Dist of the wheel, base and the given extra, markers dropped where they match."""
    with zipfile.ZipFile(wheel) as archive:
        name = next(n for n in archive.namelist() if n.endswith(".dist-info/METADATA"))
        metadata = archive.read(name).decode()
    found = []
    for line in metadata.splitlines():
        if not line.startswith("Requires-Dist:"):
            continue
        spec = line.split(":", 1)[1].strip()
        requirement, _sep, marker = spec.partition(";")
        marker = marker.strip()
        if not marker or marker.replace(" ", "") in ('extra=="%s"' % extra, "extra=='%s'" % extra):
            found.append(requirement.strip())
    return found


def platform_tags(machine, glibc):
    major, minor = (int(x) for x in glibc.split("."))
    tags = ["manylinux_%d_%d_%s" % (major, m, machine) for m in range(17, minor + 1)]
    return tags + ["manylinux2014_%s" % machine, "linux_%s" % machine]


def build(args, target, log):
    work = tempfile.mkdtemp(prefix="llama-wheel-", dir=os.path.dirname(target))
    env = dict(os.environ)
    env.pop("SOURCE_DATE_EPOCH", None)  # it turns every ISA flag off in llama.cpp's build
    env["CMAKE_ARGS"] = " ".join(args.cmake_arg + FIXED_CMAKE_ARGS)
    env["CMAKE_BUILD_PARALLEL_LEVEL"] = str(os.cpu_count() or 1)
    command = [sys.executable, "-m", "pip", "wheel", "--no-deps", "--no-cache-dir", "--no-binary", "llama-cpp-python",
               "-w", work, "llama-cpp-python==%s" % args.version]
    log.write("building llama-cpp-python %s for %s: CMAKE_ARGS=%s\n" % (args.version, args.build_class, env["CMAKE_ARGS"]))
    log.flush()
    subprocess.run(command, env=env, check=True, stdout=log, stderr=subprocess.STDOUT)
    wheel = next(os.path.join(work, n) for n in os.listdir(work) if n.endswith(".whl"))
    deps = os.path.join(work, "deps")
    command = [sys.executable, "-m", "pip", "download", "--only-binary=:all:", "--python-version", args.python_version,
               "--implementation", "cp", "-d", deps]
    for tag in platform_tags(args.machine, args.glibc):
        command += ["--platform", tag]
    if args.constraints:
        command += ["-c", args.constraints]
    subprocess.run(command + requirements_of(wheel, "server"), check=True, stdout=log, stderr=subprocess.STDOUT)
    os.chmod(work, 0o755)
    os.rename(work, target)


def main():
    parser = argparse.ArgumentParser(description=__doc__)
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

    if args.machine != platform.machine():
        sys.stderr.write("this controller is %s and cannot build for %s hosts: build on a %s host "
                         "(llama_server_build_host) or preload the cache\n" % (platform.machine(), args.machine, args.machine))
        return 2
    key = cache_key(args.version, args.build_class, args.cmake_arg, args.constraints)
    target = os.path.join(args.cache, key)
    if args.plan:
        cached = os.path.isdir(target)
        wheel = next((os.path.join(target, n) for n in sorted(os.listdir(target)) if n.endswith(".whl")), None) if cached else None
        print(json.dumps({"wheel": wheel, "deps": os.path.join(target, "deps"), "built": not cached, "key": key}))
        return 0
    os.makedirs(args.cache, exist_ok=True)
    with open(os.path.join(args.cache, ".lock-" + key), "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        built = not os.path.isdir(target)
        if built:
            with open(os.path.join(args.cache, key + ".build.log"), "w") as log:
                try:
                    build(args, target, log)
                except subprocess.CalledProcessError as exc:
                    sys.stderr.write("build failed (%s); log: %s\n" % (exc, log.name))
                    return 1
    wheel = next(os.path.join(target, n) for n in sorted(os.listdir(target)) if n.endswith(".whl"))
    print(json.dumps({"wheel": wheel, "deps": os.path.join(target, "deps"), "built": built, "key": key}))
    return 0


if __name__ == "__main__":
    sys.exit(main())
