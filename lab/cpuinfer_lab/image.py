"""Build the lab's base images: mmdebstrap in a user namespace → tar → ext4 without loop mounts.

An image is cached under cache_root()/images/<arch>-<key>, where key hashes the recipe and this
builder, so a recipe change builds a new image and an unchanged one is reused.
"""

import hashlib
import os
import shutil
import subprocess
import time
from dataclasses import dataclass
from pathlib import Path

from . import paths, userns

ARCHES = ("amd64", "arm64")
SUITE = "bookworm"
IMAGE_SIZE = "4G"
# Bump when a change to this builder changes what lands in the image (the recipe is hashed anyway).
BUILDER_VERSION = 1


@dataclass(frozen=True)
class Image:
    arch: str
    directory: Path

    @property
    def disk(self) -> Path:
        return self.directory / "base.img"

    @property
    def kernel(self) -> Path:
        return self.directory / "vmlinuz"

    @property
    def initrd(self) -> Path:
        return self.directory / "initrd.img"

    @property
    def ssh_key(self) -> Path:
        return self.directory / "id_ed25519"

    @property
    def ready(self) -> bool:
        return (self.directory / "ready").exists()


def mirror() -> str:
    return os.environ.get("CPUINFER_LAB_MIRROR", "http://deb.debian.org/debian")


def packages(arch: str) -> list[str]:
    names = []
    for name in ("packages-common.txt", f"packages-{arch}.txt"):
        for line in (paths.RECIPE_DIR / name).read_text(encoding="utf-8").splitlines():
            line = line.split("#", 1)[0].strip()
            if line:
                names.append(line)
    return names


def recipe_key(arch: str) -> str:
    digest = hashlib.sha256(f"{arch}\n{SUITE}\n{mirror()}\n{IMAGE_SIZE}\n{BUILDER_VERSION}\n".encode())
    for path in sorted(paths.RECIPE_DIR.iterdir()):
        digest.update(path.name.encode() + b"\0" + path.read_bytes())
    return digest.hexdigest()[:16]


def image_for(arch: str) -> Image:
    if arch not in ARCHES:
        raise ValueError(f"unknown architecture {arch!r}; the lab builds {', '.join(ARCHES)}")
    return Image(arch, paths.cache_root() / "images" / f"{arch}-{recipe_key(arch)}")


def _run(argv: list[str], **kwargs) -> None:
    subprocess.run(argv, check=True, **kwargs)


def _qemu_aarch64_static(tools: Path) -> Path:
    """qemu-aarch64-static unpacked from Debian's .deb, never installed: installing it would
    register binfmt handlers for the whole host."""
    binary = tools / "usr" / "bin" / "qemu-aarch64-static"
    if binary.exists():
        return binary
    download = tools / "download"
    download.mkdir(parents=True, exist_ok=True)
    _run(["apt-get", "download", "qemu-user-static"], cwd=download)
    deb = next(download.glob("qemu-user-static_*.deb"))
    _run(["dpkg-deb", "-x", str(deb), str(tools)])
    shutil.rmtree(download)
    return binary


def _chown_tree(path: Path, uid: int) -> None:
    os.chown(path, uid, uid)
    for parent, dirs, files in os.walk(path):
        for name in dirs + files:
            os.lchown(os.path.join(parent, name), uid, uid)


def _mmdebstrap_argv(arch: str, work: Path) -> list[str]:
    recipe = work / "recipe"
    return [
        "mmdebstrap",
        "--mode=unshare",
        "--variant=minbase",
        f"--architectures={arch}",
        f"--include={','.join(packages(arch))}",
        "--aptopt=Acquire::Retries \"3\"",
        f"--essential-hook=sh {recipe}/essential-hook.sh \"$1\" {arch}",
        f"--customize-hook=sh {recipe}/customize-hook.sh \"$1\" {work}/id_ed25519.pub",
        # kernel and initrd leave the tree here; qemu boots them directly (no bootloader needed)
        f"--customize-hook=cp -L \"$1/vmlinuz\" {work}/vmlinuz",
        f"--customize-hook=cp -L \"$1/initrd.img\" {work}/initrd.img",
        SUITE,
        str(work / "rootfs.tar"),
        f"deb {mirror()} {SUITE} main",
        f"deb {mirror()} {SUITE}-updates main",
    ]


def _remove_abandoned_builds(root: Path) -> None:
    """Work trees of builds whose process died (a killed run) are removed, not reused."""
    for work in root.glob("build-*-*"):
        pid = work.name.rsplit("-", 1)[1]
        if pid.isdigit() and not Path(f"/proc/{pid}").exists():
            shutil.rmtree(work, ignore_errors=True)


def build(arch: str, log=print) -> Image:
    """Return the cached image for arch, building it first when the recipe changed."""
    image = image_for(arch)
    if image.ready:
        return image
    root = paths.cache_root()
    root.mkdir(parents=True, exist_ok=True)
    _remove_abandoned_builds(root)
    work = root / f"build-{arch}-{os.getpid()}"
    shutil.rmtree(work, ignore_errors=True)
    work.mkdir(parents=True)
    started = time.monotonic()
    try:
        shutil.copytree(paths.RECIPE_DIR, work / "recipe")
        _run(["ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-C", "cpuinfer-lab", "-f", str(work / "id_ed25519")])
        interpreter = _qemu_aarch64_static(root / "tools") if arch != "amd64" else None
        _chown_tree(work, userns.HOST_ID_BASE)
        env = {"PATH": "/usr/sbin:/usr/bin:/sbin:/bin", "TMPDIR": str(work), "HOME": str(work), "LC_ALL": "C.UTF-8"}
        log(f"lab: building {arch} rootfs with mmdebstrap in a user namespace ({work})")
        code = userns.run_as_namespace_root(_mmdebstrap_argv(arch, work), env, interpreter)
        if code != 0:
            raise RuntimeError(f"mmdebstrap for {arch} failed with exit code {code}; work tree kept at {work}")
        rootfs_built = time.monotonic()
        tree = work / "tree"
        tree.mkdir()
        _run(["tar", "--numeric-owner", "--xattrs", "--xattrs-include=*", "-xpf", str(work / "rootfs.tar"), "-C", str(tree)])
        _run(["mkfs.ext4", "-q", "-F", "-L", "lab-root", "-d", str(tree), str(work / "base.img"), IMAGE_SIZE])
        image.directory.mkdir(parents=True, exist_ok=True)
        for name in ("base.img", "vmlinuz", "initrd.img", "id_ed25519", "id_ed25519.pub"):
            os.replace(work / name, image.directory / name)
        for name in ("id_ed25519", "id_ed25519.pub", "vmlinuz", "initrd.img"):
            os.chown(image.directory / name, 0, 0)
        timings = f"rootfs_s={rootfs_built - started:.1f} image_s={time.monotonic() - rootfs_built:.1f}\n"
        (image.directory / "build-timings").write_text(timings, encoding="ascii")
        (image.directory / "ready").write_text(time.strftime("%Y-%m-%dT%H:%M:%SZ\n", time.gmtime()), encoding="ascii")
        log(f"lab: {arch} image ready in {image.directory} ({timings.strip()})")
    except BaseException:
        log(f"lab: {arch} image build failed; see {work}")
        raise
    shutil.rmtree(work, ignore_errors=True)
    return image


def prune_stale(arch: str, in_use: set[str], log=print) -> None:
    """Remove images of arch built from older recipes, except those a running VM still reads."""
    current = image_for(arch).directory
    for directory in (paths.cache_root() / "images").glob(f"{arch}-*"):
        if directory != current and str(directory) not in in_use:
            shutil.rmtree(directory, ignore_errors=True)
            log(f"lab: removed stale image {directory}")
