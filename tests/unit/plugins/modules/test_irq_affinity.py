"""irq_affinity on a fake /proc/irq: moves what can move, names what cannot, undoes on a refusal."""

import errno

import pytest

from ansible_collections.cpuinfer.llm.plugins.module_utils import _irq
from ansible_collections.cpuinfer.llm.plugins.modules import irq_affinity

from fake_irq import FakeIrqKernel
from kernel_tree import snapshot, write_tree


@pytest.fixture
def kernel(tmp_path, monkeypatch):
    return FakeIrqKernel(tmp_path, monkeypatch)


def values(root):
    """What the kernel would show (a sysfs read has no trailing newline question)."""
    return {path: text.strip() for path, text in snapshot(root).items()}


def affinity(root, irq):
    return (root / ("proc/irq/%d/smp_affinity_list" % irq)).read_text().strip()


def test_moves_movable_irqs_and_names_the_rest(tmp_path, kernel, run_module):
    failed, result = run_module(irq_affinity, {"cpus": "0", "root": str(tmp_path)}, diff=True)
    assert not failed, result
    assert result["changed"]
    assert result["moved"] == [24, 25]
    assert result["unmovable"] == [{"irq": 0, "reason": "Input/output error"}]
    assert affinity(tmp_path, 24) == "0" and affinity(tmp_path, 25) == "0" and affinity(tmp_path, 0) == "0-3"
    assert _irq.parse_mask((tmp_path / "proc/irq/default_smp_affinity").read_text()) == {0}
    assert result["after"]["default"] == "0"
    assert "24 = 0-3" in result["diff"]["before"] and "24 = 0" in result["diff"]["after"]


def test_second_run_is_unchanged_despite_the_unmovable_irq(tmp_path, kernel, run_module):
    run_module(irq_affinity, {"cpus": "0", "root": str(tmp_path)})
    (tmp_path / "proc/irq/default_smp_affinity").write_text("00000001\n")
    failed, result = run_module(irq_affinity, {"cpus": "0", "root": str(tmp_path)})
    assert not failed and not result["changed"], result
    assert result["unmovable"] == [{"irq": 0, "reason": "Input/output error"}]


def test_check_mode_writes_nothing_and_says_what_it_could_not_predict(tmp_path, kernel, run_module):
    before = values(tmp_path)
    failed, result = run_module(irq_affinity, {"cpus": "0", "root": str(tmp_path)}, check=True)
    assert not failed and result["changed"]
    assert kernel.writes == [] and values(tmp_path) == before
    # nothing tells check mode that IRQ 0 is unmovable on a host never converged: it says so
    assert result["moved"] == [0, 24, 25] and result["unpredicted"] == [0, 24, 25]
    assert "could not tell whether IRQs 0, 24, 25 can move" in result["warnings"][0]


def test_check_mode_reads_kernel_managed_irqs_from_debugfs(tmp_path, kernel, run_module):
    write_tree(tmp_path, {
        "/sys/kernel/debug/irq/irqs/0": "handler:  handle_edge_irq\ndstate: 0x3640\n IRQD_AFFINITY_MANAGED\n",
        "/sys/kernel/debug/irq/irqs/24": "handler:  handle_edge_irq\ndstate: 0x3400\n IRQD_ACTIVATED\n",
    })
    failed, result = run_module(irq_affinity, {"cpus": "0", "root": str(tmp_path)}, check=True)
    assert not failed and kernel.writes == []
    assert result["unmovable"] == [{"irq": 0, "reason": "kernel-managed (debugfs IRQD_AFFINITY_MANAGED)"}]
    assert result["moved"] == [24, 25] and result["unpredicted"] == [25]


def test_check_mode_after_a_real_run_predicts_the_recorded_refusal(tmp_path, kernel, run_module):
    write_tree(tmp_path, {"/sys/kernel/irq/0/actions": "timer\n"})
    run_module(irq_affinity, {"cpus": "0", "root": str(tmp_path)})
    assert (tmp_path / "var/lib/cpuinfer/irq-unmovable").read_text().endswith("0 timer\n")
    (tmp_path / "proc/irq/default_smp_affinity").write_text("00000001\n")
    kernel.writes.clear()
    before = values(tmp_path)
    failed, result = run_module(irq_affinity, {"cpus": "0", "root": str(tmp_path)}, check=True)
    assert not failed and not result["changed"], result  # the verify playbook sees no drift
    assert kernel.writes == [] and values(tmp_path) == before
    assert result["unmovable"][0]["irq"] == 0 and "refused before" in result["unmovable"][0]["reason"]
    # the record holds only while IRQ 0 serves the same handlers
    (tmp_path / "sys/kernel/irq/0/actions").write_text("eth0-rx\n")
    failed, result = run_module(irq_affinity, {"cpus": "0", "root": str(tmp_path)}, check=True)
    assert result["changed"] and result["unpredicted"] == [0]


def test_other_refusal_undoes_the_run(tmp_path, kernel, run_module):
    kernel.refuse["proc/irq/26/smp_affinity_list"] = errno.EACCES
    before = values(tmp_path)
    failed, result = run_module(irq_affinity, {"cpus": "1", "root": str(tmp_path)})
    assert failed
    assert "put back" in result["msg"]
    assert values(tmp_path) == before


@pytest.mark.parametrize("cpus, message", [("", "empty"), ("4-5", "not online"), ("3-1", "reversed")])
def test_bad_requests_write_nothing(tmp_path, kernel, run_module, cpus, message):
    before = values(tmp_path)
    failed, result = run_module(irq_affinity, {"cpus": cpus, "root": str(tmp_path)})
    assert failed and message in result["msg"]
    assert values(tmp_path) == before


def test_masks_round_trip():
    assert _irq.parse_mask("00000000,00000003") == {0, 1}
    assert _irq.format_mask({0, 1, 33}, 64) == "00000002,00000003"
    assert _irq.parse_mask(_irq.format_mask({5, 40}, 64)) == {5, 40}


def test_within_leaves_irqs_already_inside_the_cpus(tmp_path, kernel, run_module):
    # irqbalance narrowed IRQ 25 to CPU 2 and 26 to CPU 0, both inside 0-2: only 24 (0-3) moves
    failed, result = run_module(irq_affinity, {"cpus": "0-2", "match": "within", "root": str(tmp_path)})
    assert not failed, result
    assert result["moved"] == [24]
    assert affinity(tmp_path, 24) == "0-2" and affinity(tmp_path, 25) == "2" and affinity(tmp_path, 26) == "0"
    failed, again = run_module(irq_affinity, {"cpus": "0-2", "match": "within", "root": str(tmp_path)})
    assert not failed and not again["changed"], again


def test_exact_spreads_narrowed_irqs_again(tmp_path, kernel, run_module):
    failed, result = run_module(irq_affinity, {"cpus": "0-3", "root": str(tmp_path)})
    assert not failed, result
    assert result["moved"] == [25, 26]
    assert affinity(tmp_path, 25) == "0-3" and affinity(tmp_path, 26) == "0-3"
