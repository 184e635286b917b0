"""systemctl show's blocks read as unit states; nothing asked where systemd cannot be."""

from ansible_collections.cpuinfer.llm.plugins.module_utils import _systemd_units

SHOWN = """Id=cpuinfer-besteffort.slice
ActiveState=active
UnitFileState=enabled

Id=cpuinfer-besteffort-idle.service
ActiveState=inactive
UnitFileState=static

ActiveState=active
"""


def test_each_block_is_one_unit_and_a_block_without_an_id_is_left_out():
    assert _systemd_units.parse_show(SHOWN) == {
        "cpuinfer-besteffort.slice": {"active": "active", "file": "enabled"},
        "cpuinfer-besteffort-idle.service": {"active": "inactive", "file": "static"},
    }


def test_one_systemctl_run_with_the_patterns_as_arguments_not_a_shell_line():
    calls = []

    def run(argv):
        calls.append(argv)
        return 0, SHOWN, ""

    assert len(_systemd_units.unit_states(run, "/", ["cpuinfer-*"])) == 2
    assert calls == [["systemctl", "show", "--property=Id,ActiveState,UnitFileState", "--", "cpuinfer-*"]]


def test_nothing_is_asked_below_another_root_or_without_patterns():
    def run(argv):
        raise AssertionError("systemctl must not run: %s" % argv)

    assert _systemd_units.unit_states(run, "/srv/snapshot", ["cpuinfer-*"]) == {}
    assert _systemd_units.unit_states(run, "/", []) == {}


def test_a_failing_or_missing_systemctl_reports_no_unit():
    assert _systemd_units.unit_states(lambda argv: (1, "", "System has not been booted with systemd"), "/", ["x*"]) == {}

    def missing(argv):
        raise OSError(2, "No such file or directory")

    assert _systemd_units.unit_states(missing, "/", ["x*"]) == {}
