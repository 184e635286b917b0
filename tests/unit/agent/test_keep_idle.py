"""cpuinfer-keep-idle on a temporary cgroup tree."""

from cpuinfer_agent import keep_idle

GROUP = "sys/fs/cgroup/cpuinfer.slice/cpuinfer-besteffort.slice"


def test_the_slice_gets_cpu_idle(tmp_path, capsys):
    (tmp_path / GROUP).mkdir(parents=True)
    (tmp_path / GROUP / "cpu.idle").write_text("0\n")
    assert keep_idle.main(["cpuinfer-besteffort.slice"], root=str(tmp_path)) == 0
    assert (tmp_path / GROUP / "cpu.idle").read_text() == "1"
    assert "runs with cpu.idle" in capsys.readouterr().err


def test_a_kernel_without_cpu_idle_is_said_and_no_failure(tmp_path, capsys):
    (tmp_path / GROUP).mkdir(parents=True)
    assert keep_idle.main(["cpuinfer-besteffort.slice"], root=str(tmp_path)) == 0
    assert "no cpu.idle" in capsys.readouterr().err


def test_a_slice_not_started_has_nothing_to_do(tmp_path):
    (tmp_path / "sys/fs/cgroup").mkdir(parents=True)
    assert keep_idle.keep(str(tmp_path), "cpuinfer-besteffort.slice") == "no group"


def test_wrong_arguments():
    assert keep_idle.main([]) == 2
