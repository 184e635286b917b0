"""host_tuning's IRQ keeper: the CPU list it reads, the mask it writes, one pass on a fake /proc/irq."""

import importlib.util
from pathlib import Path

from ansible_collections.cpuinfer.llm.plugins.module_utils import _irq

SCRIPT = Path(__file__).resolve().parents[3] / "roles" / "host_tuning" / "files" / "irq_affinity_keeper.py"
spec = importlib.util.spec_from_file_location("irq_affinity_keeper", SCRIPT)
keeper = importlib.util.module_from_spec(spec)
spec.loader.exec_module(keeper)


def fake_irqs(root, affinities):
    for irq, cpulist in affinities.items():
        (root / "proc/irq" / str(irq)).mkdir(parents=True)
        (root / "proc/irq" / str(irq) / "smp_affinity_list").write_text(cpulist + "\n")
    (root / "proc/irq/default_smp_affinity").write_text("f\n")


def affinity(root, irq):
    return (root / "proc/irq" / str(irq) / "smp_affinity_list").read_text().strip()


def test_cpu_list_and_mask_agree_with_the_module_helpers():
    assert keeper.cpus_of("0-1,4,40") == {0, 1, 4, 40}
    assert keeper.cpus_of("0\n") == {0}
    assert keeper.mask_of({0}) == "00000001"
    assert keeper.mask_of({0, 1, 33}) == "00000002,00000003"
    assert _irq.parse_mask(keeper.mask_of({5, 40, 63})) == {5, 40, 63}


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
