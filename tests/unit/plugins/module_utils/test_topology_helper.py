import pytest

from ansible_collections.cpuinfer.llm.plugins.module_utils import _topology
from kernel_tree import CPU, cpu_tree, kunpeng_tree, write_tree, xeon_tree


def test_a_two_socket_xeon_counts_sockets_cores_and_siblings(tmp_path):
    xeon_tree(tmp_path)
    root = str(tmp_path)
    cpus = _topology.online_cpus(root)
    assert cpus == set(range(64))
    _topology.check_consistent(root, cpus)
    assert _topology.packages_and_cores(root, cpus) == (2, 32)
    siblings = _topology.thread_siblings(root, cpus)
    assert len(siblings) == 32 and siblings[0] == "0,32"
    assert _topology.online_nodes(root) == {0, 1}
    assert [node["cpus"] for node in _topology.numa_nodes(root)] == ["0-15,32-47", "16-31,48-63"]
    assert _topology.midr(root, cpus) is None and _topology.cpufreq_governor(root, cpus) is None


def test_caches_are_counted_once_per_instance(tmp_path):
    kunpeng_tree(tmp_path)
    caches = _topology.caches(str(tmp_path), _topology.online_cpus(str(tmp_path)))
    l3 = [c for c in caches if c["level"] == 3]
    assert len(l3) == 4 and l3[0] == {"level": 3, "type": "Unified", "size_bytes": 32 * 1024 * 1024, "cpus": "0-31"}
    assert len([c for c in caches if c["level"] == 1]) == 128


def test_cpuinfo_keeps_blocks_and_keys_outside_them(tmp_path):
    write_tree(tmp_path, {"/proc/cpuinfo": "Features\t: fp asimd\n\nprocessor\t: 0\nCPU part\t: 0xd01\n\n"
                                           "processor\t: 1\nCPU part\t: 0xd01\n"})
    common, per_cpu = _topology.read_cpuinfo(str(tmp_path))
    assert common == {"Features": "fp asimd"}
    assert per_cpu == [{"processor": "0", "CPU part": "0xd01"}, {"processor": "1", "CPU part": "0xd01"}]


def test_midr_of_the_first_cpu_and_garbage_named(tmp_path):
    kunpeng_tree(tmp_path)
    root = str(tmp_path)
    assert _topology.midr(root, {0, 1}) == 0x481FD010
    write_tree(tmp_path, {CPU + "/cpu0/regs/identification/midr_el1": "kunpeng\n"})
    with pytest.raises(_topology.TopologyError, match="midr_el1 holds 'kunpeng'"):
        _topology.midr(root, {0, 1})


def test_online_cpus_without_a_directory_are_an_inconsistency(tmp_path):
    cpu_tree(tmp_path, sockets=1, cores_per_socket=2, threads_per_core=1)
    write_tree(tmp_path, {CPU + "/online": "0-3\n"})
    with pytest.raises(_topology.TopologyError, match="lists CPUs 2-3, but there is no directory"):
        _topology.check_consistent(str(tmp_path), _topology.online_cpus(str(tmp_path)))


def test_package_ids_on_some_cpus_only_are_refused(tmp_path):
    cpu_tree(tmp_path, sockets=1, cores_per_socket=2, threads_per_core=1)
    (tmp_path / CPU.lstrip("/") / "cpu1/topology/physical_package_id").unlink()
    with pytest.raises(_topology.TopologyError, match="CPUs 1 have no topology/physical_package_id"):
        _topology.packages_and_cores(str(tmp_path), {0, 1})


def test_firmware_without_packages_counts_one_socket(tmp_path):
    cpu_tree(tmp_path, sockets=1, cores_per_socket=4, threads_per_core=1)
    for cpu in range(4):
        (tmp_path / CPU.lstrip("/") / ("cpu%d/topology/physical_package_id" % cpu)).unlink()
    assert _topology.packages_and_cores(str(tmp_path), set(range(4))) == (1, 4)


def test_no_online_file_falls_back_to_directories_and_node_zero(tmp_path):
    for cpu in (0, 1, 3):
        (tmp_path / CPU.lstrip("/") / ("cpu%d" % cpu)).mkdir(parents=True)
    (tmp_path / CPU.lstrip("/") / "cpufreq").mkdir()
    assert _topology.online_cpus(str(tmp_path)) == {0, 1, 3}
    assert _topology.online_nodes(str(tmp_path)) == {0}


def test_the_governor_of_the_first_cpu(tmp_path):
    write_tree(tmp_path, {CPU + "/cpu2/cpufreq/scaling_governor": "performance\n"})
    assert _topology.cpufreq_governor(str(tmp_path), {2, 3}) == "performance"
    assert _topology.cpufreq_governor(str(tmp_path), set()) is None


def test_isolated_cpus_as_the_kernel_shows_them(tmp_path):
    assert _topology.isolated_cpus(str(tmp_path)) == {"nohz_full": None, "isolated": None}  # no NO_HZ_FULL
    write_tree(tmp_path, {CPU + "/nohz_full": "(null)\n", CPU + "/isolated": "\n"})
    assert _topology.isolated_cpus(str(tmp_path)) == {"nohz_full": "", "isolated": ""}
    write_tree(tmp_path, {CPU + "/nohz_full": "1-3,5\n", CPU + "/isolated": "2\n"})
    assert _topology.isolated_cpus(str(tmp_path)) == {"nohz_full": "1-3,5", "isolated": "2"}


def test_cpuidle_driver_and_epp_or_none_where_absent(tmp_path):
    assert _topology.cpuidle_driver(str(tmp_path)) is None and _topology.cpufreq_epp(str(tmp_path), {0}) is None
    write_tree(tmp_path, {CPU + "/cpuidle/current_driver": "none\n"})
    assert _topology.cpuidle_driver(str(tmp_path)) is None  # what a VM under TCG shows
    write_tree(tmp_path, {CPU + "/cpuidle/current_driver": "intel_idle\n",
                          CPU + "/cpu0/cpufreq/energy_performance_preference": "balance_performance\n"})
    assert _topology.cpuidle_driver(str(tmp_path)) == "intel_idle"
    assert _topology.cpufreq_epp(str(tmp_path), {0, 1}) == "balance_performance"
