"""systemctl show's blocks read as unit states; nothing asked where systemd cannot be."""

import pytest

from ansible_collections.cpuinfer.llm.plugins.module_utils import _systemd_units
from ansible_collections.cpuinfer.llm.plugins.module_utils._errors import HostError

from fake_systemd import FakeSystemd

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


UNIT_FILE = "/etc/systemd/system/demo.service"


def _unit(name, enabled=None, restart_on_change=()):
    return {"name": name, "enabled": enabled, "restart_on_change": list(restart_on_change)}


def _carry_out(plan):
    for step in plan.steps:
        step.do()


def test_a_new_unit_file_reloads_systemd_then_the_unit_is_enabled_and_started():
    systemd = FakeSystemd()
    plan = _systemd_units.plan(systemd, [_unit("demo.service", enabled=True)], [UNIT_FILE])
    _carry_out(plan)
    assert systemd.changes() == [["daemon-reload"], ["enable", "demo.service"], ["start", "demo.service"]]
    assert plan.actions == dict(reloaded=True, enabled=["demo.service"], disabled=[], started=["demo.service"],
                                restarted=[])


def test_a_running_enabled_unit_whose_files_did_not_change_is_left_alone():
    systemd = FakeSystemd({"demo.service": {"active": "active", "file": "enabled"}})
    plan = _systemd_units.plan(systemd, [_unit("demo.service", True, [UNIT_FILE])], [])
    assert plan.steps == [] and plan.diff is None
    assert plan.around(["file step"]) == ["file step"]  # no guard where nothing is done to a unit


def test_a_running_unit_restarts_only_when_one_of_its_paths_changed():
    systemd = FakeSystemd({"demo.service": {"active": "active", "file": "enabled"}})
    config = "/etc/demo/demo.conf"
    _carry_out(_systemd_units.plan(systemd, [_unit("demo.service", True, [config])], ["/etc/demo/other.conf"]))
    assert systemd.changes() == []
    _carry_out(_systemd_units.plan(systemd, [_unit("demo.service", True, ["/etc//demo/demo.conf"])], [config]))
    assert systemd.changes() == [["restart", "demo.service"]]


def test_a_stopped_unit_is_started_not_restarted_and_a_static_one_is_not_enabled():
    systemd = FakeSystemd({"idle.service": {"active": "failed", "file": "static"}})
    plan = _systemd_units.plan(systemd, [_unit("idle.service", True, ["/etc/x"])], ["/etc/x"])
    _carry_out(plan)
    assert systemd.changes() == [["start", "idle.service"]]


def test_enabled_false_disables_and_unset_leaves_the_unit_file_state_alone():
    systemd = FakeSystemd({"a.service": {"active": "active", "file": "enabled"},
                           "b.service": {"active": "active", "file": "disabled"}})
    _carry_out(_systemd_units.plan(systemd, [_unit("a.service", False), _unit("b.service")], []))
    assert systemd.changes() == [["disable", "a.service"]]


def test_a_changed_file_outside_systemds_directories_reloads_nothing():
    assert not _systemd_units.reload_needed(["/etc/demo/demo.conf", "/etc/systemd/system.conf.d"])
    assert _systemd_units.reload_needed(["/etc/systemd/system/system.slice.d/50-cpus.conf"])
    assert _systemd_units.reload_needed(["/usr/lib/systemd/system/x.service"])


def test_undone_newest_first_the_guard_reloads_and_restarts_again_once_the_files_are_back():
    systemd = FakeSystemd({"kept.service": {"active": "active", "file": "enabled"}})
    units = [_unit("kept.service", True, [UNIT_FILE]), _unit("new.service", True)]
    plan = _systemd_units.plan(systemd, units, [UNIT_FILE])
    file_step = _systemd_units.Step("write", lambda: systemd.calls.append(["systemctl", "file written"]),
                                    lambda: systemd.calls.append(["systemctl", "file back"]))
    steps = plan.around([file_step])
    for step in steps:
        step.do()
    assert systemd.changes() == [["file written"], ["daemon-reload"], ["restart", "kept.service"],
                                 ["enable", "new.service"], ["start", "new.service"]]
    del systemd.calls[:]
    for step in reversed(steps):
        step.undo()
    assert systemd.changes() == [["stop", "new.service"], ["disable", "new.service"], ["file back"],
                                 ["daemon-reload"], ["restart", "kept.service"]]


def test_a_failing_systemctl_is_a_host_error_naming_the_command():
    systemd = FakeSystemd(fail=["start", "demo.service"])
    plan = _systemd_units.plan(systemd, [_unit("demo.service")], [])
    with pytest.raises(HostError, match=r"systemctl start demo.service failed \(exit 1\): Job for demo.service failed"):
        _carry_out(plan)


@pytest.mark.parametrize("units, root, problem", [
    ([_unit("demo")], "/", "units: 'demo' is not a unit name"),
    ([_unit("a.service"), _unit("a.service")], "/", "units: a.service is listed twice"),
    ([_unit("a.service", restart_on_change=["/etc/typo.conf"])], "/",
     "units a.service: restart_on_change /etc/typo.conf is not one of this run's files"),
    ([_unit("a.service")], "/srv/tree", "units: systemd runs this host's units, not a tree's: give none with root /srv/tree"),
])
def test_each_problem_of_the_units_is_named(units, root, problem):
    assert any(found.startswith(problem) for found in _systemd_units.unit_problems(root, units, {"/etc/demo.conf"}))


def test_no_units_no_problem_whatever_the_root():
    assert _systemd_units.unit_problems("/srv/tree", [], set()) == []


def test_states_systemctl_cannot_give_stop_the_plan_instead_of_passing_for_stopped():
    calls = []

    def run(argv):
        calls.append(argv)
        return 1, "", "Failed to connect to bus"

    with pytest.raises(HostError, match=r"systemctl show demo.service failed \(exit 1\): Failed to connect to bus"):
        _systemd_units.plan(run, [_unit("demo.service", True, [UNIT_FILE])], [UNIT_FILE])
    assert [argv[1] for argv in calls] == ["show"]
