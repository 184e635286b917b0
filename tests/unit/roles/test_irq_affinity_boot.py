"""host_tuning's boot-time IRQ script: the CPU list it reads and the mask it writes."""

import importlib.util
from pathlib import Path

from ansible_collections.cpuinfer.llm.plugins.module_utils import _irq

SCRIPT = Path(__file__).resolve().parents[3] / "roles" / "host_tuning" / "files" / "irq_affinity_boot.py"
spec = importlib.util.spec_from_file_location("irq_affinity_boot", SCRIPT)
boot = importlib.util.module_from_spec(spec)
spec.loader.exec_module(boot)


def test_cpu_list_and_mask_agree_with_the_module_helpers():
    assert boot.cpus_of("0-1,4,40") == {0, 1, 4, 40}
    assert boot.mask_of({0}) == "00000001"
    assert boot.mask_of({0, 1, 33}) == "00000002,00000003"
    assert _irq.parse_mask(boot.mask_of({5, 40, 63})) == {5, 40, 63}
