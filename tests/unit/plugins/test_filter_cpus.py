import pytest

from ansible.errors import AnsibleFilterError
from ansible_collections.cpuinfer.llm.plugins.filter.cpus import inference_threads

XEON_8_CORES_HT = ["%d,%d" % (c, c + 8) for c in range(8)]


@pytest.mark.parametrize("allowed,quota,threads", [
    ("", 0, 8),            # whole host: one thread per physical core, not per hyperthread
    ("2-5", 0, 4),
    ("2-5,10-13", 0, 4),   # both hyperthreads of cores 2-5 still make 4 cores
    ("2-7", 300, 3),       # quota caps it
    ("2-7", 250, 3),       # 2.5 CPUs round up
    ("0", 0, 1),
    ("0-15", 50, 1),
])
def test_threads(allowed, quota, threads):
    assert inference_threads(XEON_8_CORES_HT, allowed, quota) == threads


def test_bad_cpu_list():
    with pytest.raises(AnsibleFilterError, match="reversed"):
        inference_threads(XEON_8_CORES_HT, "5-2")
