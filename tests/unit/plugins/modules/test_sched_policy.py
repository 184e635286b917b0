import errno
import os

import pytest

from ansible_collections.cpuinfer.llm.plugins.module_utils import _sched
from ansible_collections.cpuinfer.llm.plugins.modules import sched_policy

from kernel_tree import write_tree

DEFAULT = _sched.Attrs("other", 0, 0, 0, 0, 0, False)


class FakeSyscalls:
    """Threads' attributes in a dict; refuse[tid] = errno makes the kernel say no."""

    can_change = True
    table = {}
    refuse = {}
    sets = []

    def __init__(self, machine=None):
        pass

    def get(self, tid):
        if tid not in self.table:
            raise OSError(errno.ESRCH, "No such process")
        return self.table[tid]

    def set(self, tid, attrs):
        if tid in self.refuse:
            raise OSError(self.refuse[tid], os.strerror(self.refuse[tid]))
        FakeSyscalls.sets.append(tid)
        self.table[tid] = attrs


@pytest.fixture
def host(tmp_path, monkeypatch):
    """Process 100 (threads 100, 101) 'llama-server' in llama.service; 200 'stress-ng' elsewhere."""
    write_tree(tmp_path, {
        "/proc/sys/kernel/sched_rt_runtime_us": "950000\n",
        "/proc/100/stat": "100 (llama-server) S", "/proc/100/comm": "llama-server\n",
        "/proc/100/task/100/comm": "llama-server\n", "/proc/100/task/101/comm": "llama-worker\n",
        "/proc/200/stat": "200 (stress-ng) R", "/proc/200/comm": "stress-ng\n", "/proc/200/task/200/comm": "stress-ng\n",
        "/sys/fs/cgroup/system.slice/llama.service/cgroup.procs": "100\n",
        "/sys/fs/cgroup/system.slice/noise.service/cgroup.procs": "200\n",
    })
    FakeSyscalls.table = {100: DEFAULT, 101: DEFAULT, 200: DEFAULT}
    FakeSyscalls.refuse = {}
    FakeSyscalls.sets = []
    monkeypatch.setattr(_sched, "scheduler_for", lambda root: FakeSyscalls())
    return tmp_path


def run(run_module, host, check=False, **args):
    return run_module(sched_policy, dict(args, root=str(host)), check=check)


def test_fifo_for_every_thread_of_a_unit(run_module, host):
    failed, result = run(run_module, host, unit="llama.service", policy="fifo", priority=10)
    assert not failed, result
    assert result["changed"]
    assert FakeSyscalls.table[100].policy == "fifo" and FakeSyscalls.table[101].priority == 10
    assert FakeSyscalls.table[200] == DEFAULT
    assert [t["name"] for t in result["threads"]] == ["llama-server", "llama-worker"]
    assert result["threads"][0]["before"]["policy"] == "other"


def test_second_run_is_unchanged(run_module, host):
    run(run_module, host, pid=100, policy="fifo", priority=10)
    FakeSyscalls.sets = []
    failed, result = run(run_module, host, pid=100, policy="fifo", priority=10)
    assert not failed and not result["changed"] and FakeSyscalls.sets == []


def test_deadline_with_units(run_module, host):
    failed, result = run(run_module, host, pid=100, threads="main", policy="deadline",
                         runtime="2ms", deadline="10ms", period="10ms")
    assert not failed and result["changed"]
    assert FakeSyscalls.table[100][3:6] == (2000000, 10000000, 10000000)
    assert FakeSyscalls.table[101] == DEFAULT  # threads=main
    assert not run(run_module, host, pid=100, threads="main", policy="deadline", runtime="2000000",
                   deadline="10ms")[1]["changed"]  # period defaults to deadline; ns spelled out


def test_check_mode_changes_nothing(run_module, host):
    failed, result = run(run_module, host, check=True, process_name="stress-ng", policy="idle")
    assert not failed and result["changed"] and FakeSyscalls.sets == []
    assert result["threads"][0]["after"]["policy"] == "idle"


def test_query_reports_without_changing(run_module, host):
    failed, result = run(run_module, host, pids=[100, 200], state="query")
    assert not failed and not result["changed"] and len(result["threads"]) == 3
    assert FakeSyscalls.sets == []


def test_nice_is_kept_unless_given(run_module, host):
    FakeSyscalls.table[200] = _sched.Attrs("other", 0, 5, 0, 0, 0, False)
    run(run_module, host, pid=200, policy="batch")
    assert FakeSyscalls.table[200].nice == 5 and FakeSyscalls.table[200].policy == "batch"
    run(run_module, host, pid=200, policy="batch", nice=19)
    assert FakeSyscalls.table[200].nice == 19


@pytest.mark.parametrize("args,message", [
    (dict(pid=100, policy="fifo", priority=0), "needs priority 1..99"),
    (dict(pid=100, policy="rr"), "needs priority 1..99"),
    (dict(pid=100, policy="other", priority=5), "priority is only for fifo and rr"),
    (dict(pid=100, policy="fifo", priority=5, nice=3), "nice (-20..19) applies to other and batch only"),
    (dict(pid=100, policy="deadline", runtime="20ms", deadline="10ms"), "runtime (20000000) <= deadline"),
    (dict(pid=100, policy="deadline", runtime="500ns", deadline="10ms"), "1024 ns <= runtime"),
    (dict(pid=100, policy="deadline", runtime="2 weeks", deadline="10ms"), "is not a duration"),
    (dict(pid=100, policy="other", runtime="2ms"), "only for policy deadline"),
    (dict(pid=999, policy="idle"), "no process 999"),
    (dict(unit="gone.service", policy="idle"), "unit gone.service is not running"),
    (dict(process_name="nothing", policy="idle"), "no process is named nothing"),
    (dict(pid=100, unit="llama.service", policy="idle"), "exactly one of"),
    (dict(pid=100), "policy is required"),
])
def test_bad_input_changes_nothing(run_module, host, args, message):
    failed, result = run(run_module, host, **args)
    assert failed and message in result["msg"], result
    assert FakeSyscalls.sets == []


def test_rt_refused_while_throttling_is_off(run_module, host):
    write_tree(host, {"/proc/sys/kernel/sched_rt_runtime_us": "-1\n"})
    failed, result = run(run_module, host, pid=100, policy="fifo", priority=10)
    assert failed and "throttling is off" in result["msg"]
    failed, result = run(run_module, host, pid=100, policy="fifo", priority=10, allow_unthrottled_rt=True)
    assert not failed and result["changed"]


def test_admission_failure_is_explained_and_earlier_threads_put_back(run_module, host):
    FakeSyscalls.refuse = {101: errno.EBUSY}
    failed, result = run(run_module, host, unit="llama.service", policy="deadline", runtime="5ms", deadline="10ms")
    assert failed and "admission control" in result["msg"] and "put back" in result["msg"]
    assert FakeSyscalls.table[100] == DEFAULT and FakeSyscalls.table[101] == DEFAULT


def test_eperm_for_rt_names_the_capability_and_rt_groups(run_module, host):
    FakeSyscalls.refuse = {100: errno.EPERM}
    failed, result = run(run_module, host, pid=100, threads="main", policy="rr", priority=5)
    assert failed and "CAP_SYS_NICE" in result["msg"] and "RT_GROUP_SCHED" in result["msg"]


def test_real_sched_getattr_reads_this_process():
    attrs = _sched.Syscalls().get(os.getpid())
    assert attrs.policy in ("other", "batch", "idle")
    assert attrs.nice == os.getpriority(os.PRIO_PROCESS, 0)


@pytest.mark.parametrize("text,ns", [("10ms", 10000000), ("500us", 500000), ("2s", 2000000000), ("1024", 1024), ("7 ns", 7)])
def test_durations(text, ns):
    assert _sched.parse_duration_ns(text) == ns


def test_a_foreign_root_is_read_from_procfs_and_never_changed(run_module, tmp_path):
    """With root other than /, threads' policy comes from ROOT/proc/PID/task/TID/stat; a change is refused."""
    fields = ["S"] + ["0"] * 15 + ["5"] + ["0"] * 20 + ["10", "1"]  # fields 3.., 19 nice=5, 40 rt_priority=10, 41 policy=1
    write_tree(tmp_path, {"/proc/7/stat": "7 (worker one) " + " ".join(fields),
                          "/proc/7/task/7/stat": "7 (worker one) " + " ".join(fields),
                          "/proc/7/task/7/comm": "worker one\n"})
    failed, result = run_module(sched_policy, {"pid": 7, "state": "query", "root": str(tmp_path)})
    assert not failed, result
    assert result["threads"][0]["before"]["policy"] == "fifo" and result["threads"][0]["before"]["priority"] == 10
    assert result["threads"][0]["before"]["nice"] == 5
    failed, result = run_module(sched_policy, {"pid": 7, "policy": "idle", "root": str(tmp_path)}, check=True)
    assert not failed and result["changed"]
    failed, result = run_module(sched_policy, {"pid": 7, "policy": "idle", "root": str(tmp_path)})
    assert failed and "another root cannot redirect" in result["msg"]
