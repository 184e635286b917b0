"""One slice name for host_tuning and llama_server: llama_server runs its units in host_tuning's
host_tuning_inference_slice, or cpuinfer-inference.slice when it is not set."""

import pytest

from local_playbook import role_vars_value


@pytest.mark.parametrize("extra, expected", [
    ([], "cpuinfer-inference.slice"),
    (["-e", "host_tuning_inference_slice=llm.slice"], "llm.slice"),
])
def test_the_units_run_in_host_tunings_slice(tmp_path, extra, expected):
    text = role_vars_value(tmp_path, "llama_server", "__llama_server_slice ~ ' ' ~ __llama_server_release_patterns[1]", *extra)
    assert text == "%s /etc/systemd/system/%s" % (expected, expected)
