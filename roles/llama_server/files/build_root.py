# Copyright: cpuinfer.llm contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""A build root of the hosts' release: the engine is compiled against the glibc and libstdc++ its
hosts have, not the controller's, with Debian's native toolchain for the controller's machine and
Debian's cross toolchain for the other.

Made once per (release, controller machine) with mmdebstrap (--mode=unshare: root, or a user with
subordinate ids) and cached as a tree under CACHE/roots/. Commands run in it through unshare(1)
(a user, mount and pid namespace of their own, /dev bound and /proc mounted there): nothing is
mounted on the controller itself, and the controller's own root needs no privilege.
"""

import fcntl
import hashlib
import os
import platform
import shutil
import subprocess
import tempfile

# Bump when a change here changes what lands in a root.
ROOT_VERSION = 1
DEBIAN_SUITES = ("bullseye", "bookworm", "trixie")
# Debian architecture names and the GNU triplets of the cross compilers
DEBIAN_ARCH = {"x86_64": "amd64", "aarch64": "arm64"}
TRIPLET = {"x86_64": "x86_64-linux-gnu", "aarch64": "aarch64-linux-gnu"}
# `sh -c` text with the root and the command as arguments: no value is ever spliced into it
_ENTER = 'root=$1; shift; mount --rbind /dev "$root/dev" && mount -t proc proc "$root/proc" && exec chroot "$root" "$@"'


class BuildRootError(Exception):
    pass


def packages(controller_machine):
    """The toolchains: native for the controller, cross for every other machine with classes."""
    cross = ["crossbuild-essential-%s" % DEBIAN_ARCH[m] for m in sorted(DEBIAN_ARCH) if m != controller_machine]
    return ["cmake", "ninja-build"] + cross


def root_key(distribution, release, controller_machine, mirror):
    if distribution != "Debian" or release not in DEBIAN_SUITES:
        raise BuildRootError(
            "no build root for %s %s: this controller makes Debian roots (%s) only; build the class on one "
            "of your hosts (llama_server_build_host) or preload the build cache" % (distribution, release, ", ".join(DEBIAN_SUITES)))
    if controller_machine not in DEBIAN_ARCH:
        raise BuildRootError("no toolchains for a %s controller" % controller_machine)
    material = "\n".join([release, controller_machine, mirror, "root %d" % ROOT_VERSION] + packages(controller_machine))
    return "%s-%s-%s" % (release, controller_machine, hashlib.sha256(material.encode()).hexdigest()[:12])


def cmake_toolchain_args(target_machine, controller_machine=None):
    """CMake arguments that compile for target_machine in the root: none when native."""
    controller_machine = controller_machine or platform.machine()
    if target_machine == controller_machine:
        return []
    triplet = TRIPLET[target_machine]
    return [
        "-DCMAKE_SYSTEM_NAME=Linux", "-DCMAKE_SYSTEM_PROCESSOR=%s" % target_machine,
        "-DCMAKE_C_COMPILER=%s-gcc" % triplet, "-DCMAKE_CXX_COMPILER=%s-g++" % triplet,
        "-DCMAKE_FIND_ROOT_PATH=/usr/%s" % triplet, "-DCMAKE_FIND_ROOT_PATH_MODE_PROGRAM=NEVER",
        "-DCMAKE_FIND_ROOT_PATH_MODE_LIBRARY=ONLY", "-DCMAKE_FIND_ROOT_PATH_MODE_INCLUDE=ONLY",
    ]


def mmdebstrap_argv(release, controller_machine, mirror, tarball):
    return [
        "mmdebstrap", "--mode=unshare", "--variant=buildd", "--architectures=%s" % DEBIAN_ARCH[controller_machine],
        "--include=%s" % ",".join(packages(controller_machine)), '--aptopt=Acquire::Retries "3"',
        release, tarball, "deb %s %s main" % (mirror, release), "deb %s %s-updates main" % (mirror, release),
    ]


def ensure(cache, distribution, release, mirror, run, log):
    """The root's directory, made first when missing; run(argv) runs a command and logs it."""
    controller_machine = platform.machine()
    key = root_key(distribution, release, controller_machine, mirror)
    roots = os.path.join(cache, "roots")
    tree = os.path.join(roots, key)
    if os.path.exists(os.path.join(tree, ".cpuinfer-ready")):
        return tree
    if shutil.which("mmdebstrap") is None:
        raise BuildRootError("making a build root of %s needs mmdebstrap on the controller (apt-get install mmdebstrap)" % release)
    os.makedirs(roots, exist_ok=True)
    with open(os.path.join(roots, ".lock-" + key), "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)  # builds of two classes at once (two plays) make one root
        if not os.path.exists(os.path.join(tree, ".cpuinfer-ready")):
            _make(tree, release, controller_machine, mirror, run, log)
    return tree


def _make(tree, release, controller_machine, mirror, run, log):
    scratch = tempfile.mkdtemp(prefix="root-", dir=os.path.dirname(tree))
    try:
        log.write("making the build root %s\n" % os.path.basename(tree))
        tarball = os.path.join(scratch, "root.tar")
        run(mmdebstrap_argv(release, controller_machine, mirror, tarball))
        unpacked = os.path.join(scratch, "tree")
        os.makedirs(unpacked)
        # /dev comes bound from the controller when the root is entered: no device nodes to create
        run(["tar", "--numeric-owner", "--exclude=./dev/*", "-xpf", tarball, "-C", unpacked])
        os.remove(tarball)
        with open(os.path.join(unpacked, ".cpuinfer-ready"), "w", encoding="ascii") as marker:
            marker.write(os.path.basename(tree) + "\n")
        shutil.rmtree(tree, ignore_errors=True)  # a half-made root of a killed run
        os.rename(unpacked, tree)
    finally:
        shutil.rmtree(scratch, ignore_errors=True)


def enter_argv(tree, command, workdir="/"):
    """argv running command (a list) as root of the build root tree, in workdir inside it."""
    return ["unshare", "--user", "--map-root-user", "--mount", "--pid", "--fork", "--kill-child",
            "sh", "-c", _ENTER, "enter", tree, "env", "-C", workdir, "HOME=/root",
            "PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"] + list(command)


def run_in(tree, command, log, env=None, workdir="/"):
    argv = enter_argv(tree, command, workdir)
    log.write("$ [root %s] %s\n" % (os.path.basename(tree), " ".join(command)))
    log.flush()
    subprocess.run(argv, env=env, check=True, stdout=log, stderr=subprocess.STDOUT)
