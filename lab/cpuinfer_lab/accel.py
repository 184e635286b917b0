"""Choose the accelerator: TCG unless KVM has been proven to boot the lab's own kernel here.

/dev/kvm existing proves nothing (some hosts expose a paravirtual device that cannot boot stock
kernels), so "auto" boots a probe VM once and remembers the verdict per host kernel and image.
"""

import os
from pathlib import Path

from . import image as images
from . import paths


def _verdict_file(arch: str) -> Path:
    kernel = os.uname().release
    return paths.cache_root() / f"kvm-verdict-{arch}-{kernel}-{images.recipe_key(arch)}"


def resolve(requested: str, arch: str, log=print) -> str:
    if requested in ("tcg", "kvm"):
        return requested
    if requested != "auto":
        raise ValueError(f"accel must be tcg, kvm or auto, not {requested!r}")
    if arch != "amd64" or os.uname().machine != "x86_64" or not os.path.exists("/dev/kvm"):
        return "tcg"
    verdict = _verdict_file(arch)
    if not verdict.exists():
        verdict.parent.mkdir(parents=True, exist_ok=True)
        verdict.write_text(_probe(log), encoding="ascii")
    return verdict.read_text(encoding="ascii").strip()


def _probe(log) -> str:
    from . import vm  # late: vm imports this module's callers

    name = "kvm-probe"
    try:
        vm.start(vm.VmSpec(name=name, accel="kvm"), boot_timeout=60, log=log)
        result = "kvm"
    except (vm.LabError, OSError) as exc:
        log(f"lab: KVM did not boot the lab kernel ({exc}); using TCG")
        result = "tcg"
    finally:
        vm.stop(name)
    return result + "\n"
