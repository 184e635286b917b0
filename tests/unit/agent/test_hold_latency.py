import struct

from cpuinfer_agent import hold_latency


def test_the_request_is_a_native_int32_of_microseconds():
    assert hold_latency.request(2) == struct.pack("=i", 2) and len(hold_latency.request(2)) == 4


def test_the_request_is_written_and_held_until_the_wait_ends(tmp_path, capsys):
    device = tmp_path / "cpu_dma_latency"
    seen = []
    code = hold_latency.main(["5"], root=str(tmp_path), device=str(device), wait=lambda: seen.append(device.read_bytes()))
    assert code == 0 and seen == [struct.pack("=i", 5)]
    assert "no cpuidle driver here" in capsys.readouterr().err


def test_the_driver_is_named_where_there_is_one(tmp_path, capsys):
    (tmp_path / "sys/devices/system/cpu/cpuidle").mkdir(parents=True)
    (tmp_path / "sys/devices/system/cpu/cpuidle/current_driver").write_text("intel_idle\n")
    assert hold_latency.main(["0"], root=str(tmp_path), device=str(tmp_path / "dev"), wait=lambda: None) == 0
    assert "cpuidle driver intel_idle" in capsys.readouterr().err


def test_bad_arguments_and_a_missing_device(tmp_path):
    for argv in ([], ["-1"], ["２"], ["3000000"], ["1", "2"]):
        assert hold_latency.main(argv, root=str(tmp_path), device=str(tmp_path / "dev"), wait=lambda: None) == 2
    assert hold_latency.main(["1"], root=str(tmp_path), device=str(tmp_path / "no/such/device"), wait=lambda: None) == 1
