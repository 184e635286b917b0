from ansible.release import __version__

from ansible_collections.cpuinfer.llm.plugins.plugin_utils._filter_target_python import MODULES_PYTHON_MIN, target_python_problem


def test_the_minimum_is_the_installed_ansible_cores_own():
    assert MODULES_PYTHON_MIN == (3, 8)  # ansible-core 2.19, pinned in requirements


def test_a_new_enough_python_passes():
    assert target_python_problem({"rc": 0, "stdout": "3.9\r\n"}, "oe2203") == ""
    assert target_python_problem({"rc": 0, "stdout": "3.11\n"}, "deb12") == ""


def test_openeuler_2003s_python_is_refused_naming_both_versions():
    problem = target_python_problem({"rc": 0, "stdout": "3.7\n"}, "oe2003")
    assert problem.startswith("oe2003 runs Python 3.7, but ansible-core %s" % __version__)
    assert "Python 3.8 or later" in problem


def test_no_python_at_all_is_said_so():
    problem = target_python_problem({"rc": 0, "stdout": "none\n"}, "bare")
    assert "bare has no Python" in problem and "found 'none'" in problem
    assert "no Python" in target_python_problem({"rc": 127, "stdout": ""}, "bare")
