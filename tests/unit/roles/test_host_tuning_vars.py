"""host_tuning's paths that name files a module owns must stay the module's own."""

from pathlib import Path

import yaml

from ansible_collections.cpuinfer.llm.plugins.module_utils import _irq

VARS = Path(__file__).resolve().parents[3] / "roles" / "host_tuning" / "vars" / "main.yml"


def test_revert_removes_the_irq_modules_own_record():
    assert yaml.safe_load(VARS.read_text())["__host_tuning_irq_record"] == _irq.UNMOVABLE_RECORD
