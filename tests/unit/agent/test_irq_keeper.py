"""The agent's IRQ keeper: the default mask it writes, one pass on a fake /proc/irq, unmovable IRQs."""

import errno

import pytest

from ansible_collections.cpuinfer.llm.plugins.module_utils import _irq
from ansible_collections.cpuinfer.llm.plugins.module_utils._knobs import KnobError
from cpuinfer_agent import irq_keeper as keeper


def fake_irqs(root, affinities):
    for irq, cpulist in affinities.items():
        (root / "proc/irq" / str(irq)).mkdir(parents=True)
        (root / "proc/irq" / str(irq) / "smp_affinity_list").write_text(cpulist + "\n")
    (root / "proc/irq/default_smp_affinity").write_text("f\n")


def affinity(root, irq):
    return (root / "proc/irq" / str(irq) / "smp_affinity_list").read_text().strip()


def test_the_default_mask_spans_the_highest_cpu(tmp_path):
    (tmp_path / "proc/irq").mkdir(parents=True)
    fake_irqs(tmp_path, {})
    keeper.set_default(str(tmp_path), {0, 1, 33})
    assert (tmp_path / "proc/irq/default_smp_affinity").read_text() == "00000002,00000003"


def test_one_pass_confines_what_runs_outside_and_leaves_the_rest(tmp_path):
    # 28 and 29: a NIC's queues that its driver spread over every CPU after boot; 25 sits on CPU 1,
    # inside the housekeeping CPUs 0-1 (irqbalance's choice), and stays there
    fake_irqs(tmp_path, {24: "0-1", 25: "1", 28: "0-3", 29: "2"})
    assert keeper.main(["0-1"], root=str(tmp_path)) == 0
    assert [affinity(tmp_path, irq) for irq in (24, 25, 28, 29)] == ["0-1", "1", "0-1", "0-1"]
    assert _irq.parse_mask((tmp_path / "proc/irq/default_smp_affinity").read_text()) == {0, 1}


def test_a_pass_reports_what_it_moved(tmp_path):
    fake_irqs(tmp_path, {24: "0", 28: "0-3"})
    assert keeper.confine(str(tmp_path), {0}, "0") == ([28], [])
    assert keeper.confine(str(tmp_path), {0}, "0") == ([], [])


def test_an_irq_the_kernel_will_not_move_is_reported_not_fatal(tmp_path, monkeypatch):
    fake_irqs(tmp_path, {24: "0-3", 28: "0-3"})
    real_write = keeper.write_knob

    def refuse_24(root, relative, value):
        if relative == _irq.affinity_relative(24):
            raise KnobError("cannot write: Input/output error", errno.EIO)
        return real_write(root, relative, value)

    monkeypatch.setattr(keeper, "write_knob", refuse_24)
    assert keeper.confine(str(tmp_path), {0}, "0") == ([28], [24])

    def refuse_all(root, relative, value):
        raise KnobError("cannot write %s%s %s: Permission denied" % (root, relative, value), errno.EACCES)

    monkeypatch.setattr(keeper, "write_knob", refuse_all)
    with pytest.raises(KnobError):
        keeper.confine(str(tmp_path), {0}, "0")
