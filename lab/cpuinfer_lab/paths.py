"""Where the lab keeps its state: outside the repository, so clones share one image cache."""

import os
from pathlib import Path

RECIPE_DIR = Path(__file__).resolve().parent.parent / "recipe"


def cache_root() -> Path:
    return Path(os.environ.get("CPUINFER_LAB_CACHE", "/var/cache/cpuinfer-lab"))


def state_root() -> Path:
    return Path(os.environ.get("CPUINFER_LAB_STATE", "/var/lib/cpuinfer-lab"))


def vm_dir(name: str) -> Path:
    return state_root() / "vms" / name
