"""The names an engine build is keyed by equal setup's min subset on the same host (here: the controller, Debian),
so builds cached under setup's names are found again."""

import json
import platform
import subprocess
import sys

from ansible_collections.cpuinfer.llm.plugins.module_utils._os_identity import os_identity


def setup_min_facts():
    out = subprocess.run(["ansible", "localhost", "-c", "local", "-m", "ansible.builtin.setup", "-a", "gather_subset=min",
                          "-e", "ansible_python_interpreter=%s" % sys.executable],
                         capture_output=True, text=True, check=True).stdout
    return json.loads(out.split("=>", 1)[1])["ansible_facts"]


def test_the_same_names_as_setup_min():
    facts = setup_min_facts()
    assert os_identity() == {
        "distribution": facts["ansible_distribution"],
        "release": facts["ansible_distribution_release"],
        "architecture": facts["ansible_architecture"],
        "python": "%s.%s" % (facts["ansible_python"]["version"]["major"], facts["ansible_python"]["version"]["minor"]),
    }


def test_the_machine_and_python_are_the_running_ones():
    identity = os_identity()
    assert identity["architecture"] == platform.machine()
    assert identity["python"] == "%d.%d" % sys.version_info[:2]
    assert identity["distribution"] and identity["release"]
