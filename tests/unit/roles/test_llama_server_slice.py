"""One slice name for host_tuning and llama_server: llama_server runs its units in host_tuning's
host_tuning_inference_slice, or cpuinfer-inference.slice when it is not set."""

from pathlib import Path

import pytest

from local_playbook import run_playbook

REPO = Path(__file__).resolve().parents[3]

PLAYBOOK = """
- hosts: localhost
  connection: local
  gather_facts: false
  vars_files:
    - {defaults}
    - {vars}
  tasks:
    - name: The slice and the release pattern that names it
      ansible.builtin.copy:
        content: "{{{{ __llama_server_slice }}}} {{{{ __llama_server_release_patterns[1] }}}}"
        dest: {out}
"""


@pytest.mark.parametrize("extra, expected", [
    ([], "cpuinfer-inference.slice"),
    (["-e", "host_tuning_inference_slice=llm.slice"], "llm.slice"),
])
def test_the_units_run_in_host_tunings_slice(tmp_path, extra, expected):
    out = tmp_path / "slice.txt"
    book = tmp_path / "play.yml"
    book.write_text(PLAYBOOK.format(defaults=REPO / "roles/llama_server/defaults/main.yml",
                                    vars=REPO / "roles/llama_server/vars/main.yml", out=out))
    result = run_playbook(book, *extra)
    assert result.returncode == 0, result.stdout + result.stderr
    assert out.read_text() == "%s /etc/systemd/system/%s" % (expected, expected)
