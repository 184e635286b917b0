"""_sched's procfs side on a fake /proc: threads and their run-delay."""

from ansible_collections.cpuinfer.llm.plugins.module_utils import _sched
from kernel_tree import write_tree


def test_run_delay_sums_the_live_threads_and_counts_them(tmp_path):
    write_tree(tmp_path, {
        "/proc/7/task/7/schedstat": "900 250000000 12\n",
        "/proc/7/task/8/schedstat": "500 50000000 8\n",
        "/proc/7/task/9/comm": "exited\n",  # gone between listing and reading: no schedstat
        "/proc/11/task/11/schedstat": "100 1000 1\n",
    })
    assert _sched.threads_of(str(tmp_path), 7, "all") == [7, 8, 9]
    assert _sched.run_delay(str(tmp_path), [7, 11]) == (250000000 + 50000000 + 1000, 3)


def test_run_delay_of_a_vanished_process_is_nothing(tmp_path):
    assert _sched.run_delay(str(tmp_path), [4242]) == (0, 0)
