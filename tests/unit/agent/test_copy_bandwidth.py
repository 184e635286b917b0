"""cpuinfer-copy-bandwidth: STREAM Copy with one process per CPU, standard library only."""

import json

from cpuinfer_agent import copy_bandwidth


def test_every_process_copies_and_the_slowest_pass_end_counts(capsys):
    result = copy_bandwidth.measure(mib=8, passes=2, processes=2)
    assert result["processes"] == 2 and result["mib_per_process"] == 8
    # a copy moves each byte twice (read and write): below 100 MB/s or above 10 TB/s is no measurement
    assert 1e8 < result["bytes_per_second"] < 1e13
    assert copy_bandwidth.main(["4", "1"]) == 0
    assert json.loads(capsys.readouterr().out)["passes"] == 1
