import errno

import pytest

from ansible_collections.cpuinfer.llm.plugins.module_utils import _irq
from ansible_collections.cpuinfer.llm.plugins.module_utils._knobs import KnobError
from kernel_tree import write_tree


def _irqs(tmp_path):
    write_tree(tmp_path, {
        "/proc/irq/0/smp_affinity_list": "0-3\n",
        "/proc/irq/25/smp_affinity_list": "1,3\n",
        "/proc/irq/7/spurious": "count 0\n",  # no affinity file: not listed
        "/proc/irq/default_smp_affinity": "f\n",
        "/sys/kernel/irq/25/actions": "virtio0-input.0\n",
        "/sys/kernel/debug/irq/irqs/25": "handler: handle_edge_irq\nstate: IRQD_AFFINITY_MANAGED\n",
        "/sys/kernel/debug/irq/irqs/0": "handler: handle_edge_irq\n",
    })
    return str(tmp_path)


def test_irqs_and_their_affinity(tmp_path):
    root = _irqs(tmp_path)
    assert _irq.irqs(root) == [0, 25]
    assert _irq.read_affinity(root, 25) == {1, 3}
    assert _irq.read_default(root) == {0, 1, 2, 3}
    assert _irq.irqs(str(tmp_path / "none")) == [] and _irq.read_default(str(tmp_path / "none")) is None


@pytest.mark.parametrize("text, cpus", [("00000000,0000000f", {0, 1, 2, 3}), ("1,00000000", {32}), ("", set()), ("0", set())])
def test_masks_parse(text, cpus):
    assert _irq.parse_mask(text) == cpus


def test_masks_format_as_the_kernel_writes_them():
    assert _irq.format_mask({0, 1}, 64) == "00000000,00000003"
    assert _irq.format_mask({33}, 40) == "00000002,00000000"
    assert _irq.format_mask(set(), 4) == "00000000"
    assert _irq.parse_mask(_irq.format_mask({0, 5, 70}, 96)) == {0, 5, 70}


def test_identity_and_kernel_management(tmp_path):
    root = _irqs(tmp_path)
    assert _irq.identity(root, 25) == "virtio0-input.0" and _irq.identity(root, 0) == ""
    assert _irq.managed_by_kernel(root, 25) is True
    assert _irq.managed_by_kernel(root, 0) is False
    assert _irq.managed_by_kernel(root, 9) is None


def test_unmovable_is_what_the_kernel_answers_with_eio_or_einval():
    assert _irq.is_unmovable(KnobError("x", errno.EIO)) and _irq.is_unmovable(KnobError("x", errno.EINVAL))
    assert not _irq.is_unmovable(KnobError("x", errno.EACCES)) and not _irq.is_unmovable(ValueError())


def test_the_unmovable_record_round_trips_and_skips_foreign_lines():
    text = _irq.render_record({25: "virtio0-input.0", 3: ""}, "# managed\n")
    assert text == "# managed\n3 \n25 virtio0-input.0\n"
    assert _irq.parse_record(text + "x y\n") == {3: "", 25: "virtio0-input.0"}
