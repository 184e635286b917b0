"""The names an engine build is keyed by equal setup's min subset on the same host (here: the controller),
so builds cached under setup's names are found again."""

import json
import os
import platform
import subprocess
import sys

from ansible_collections.cpuinfer.llm.plugins.module_utils._os_identity import os_identity


class Module:
    """What Ansible's distribution code calls on a module."""

    def run_command(self, args, **kwargs):
        result = subprocess.run(args, capture_output=True, text=True, check=False, shell=isinstance(args, str))
        return result.returncode, result.stdout, result.stderr

    def get_bin_path(self, name, required=False, opt_dirs=None):
        for directory in os.environ["PATH"].split(os.pathsep) + ["/usr/sbin", "/sbin"]:
            if os.access(os.path.join(directory, name), os.X_OK):
                return os.path.join(directory, name)
        return None


def setup_min_facts():
    out = subprocess.run(["ansible", "localhost", "-c", "local", "-m", "ansible.builtin.setup", "-a", "gather_subset=min",
                          "-e", "ansible_python_interpreter=%s" % sys.executable],
                         capture_output=True, text=True, check=True).stdout
    return json.loads(out.split("=>", 1)[1])["ansible_facts"]


def test_the_same_names_as_setup_min():
    facts = setup_min_facts()
    assert os_identity(Module()) == {
        "distribution": facts["ansible_distribution"],
        "release": facts["ansible_distribution_release"],
        "architecture": facts["ansible_architecture"],
        "python": "%s.%s" % (facts["ansible_python"]["version"]["major"], facts["ansible_python"]["version"]["minor"]),
    }


def test_the_machine_and_python_are_the_running_ones():
    identity = os_identity(Module())
    assert identity["architecture"] == platform.machine()
    assert identity["python"] == "%d.%d" % sys.version_info[:2]
    assert identity["distribution"] and identity["release"]
