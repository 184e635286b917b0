"""units_running: only what host_facts showed active (and enabled where asked) is left unstarted."""

import pytest

from ansible.errors import AnsibleFilterError

from ansible_collections.cpuinfer.llm.plugins.plugin_utils._filter_units import units_running

SLICE, IDLE = "cpuinfer-besteffort.slice", "cpuinfer-besteffort-idle.service"
UNITS = {SLICE: {"active": "active", "file": "enabled"}, IDLE: {"active": "active", "file": "static"}}


def test_active_and_enabled_units_run():
    assert units_running(UNITS, [SLICE, IDLE], enabled=[SLICE]) is True


@pytest.mark.parametrize("units", [
    dict(UNITS, **{IDLE: {"active": "inactive", "file": "static"}}),
    dict(UNITS, **{SLICE: {"active": "active", "file": "disabled"}}),
    dict(UNITS, **{SLICE: {"active": "activating", "file": "enabled"}}),
    {SLICE: UNITS[SLICE]},
    {},
])
def test_a_unit_stopped_disabled_or_not_reported_is_not_running(units):
    assert units_running(units, [SLICE, IDLE], enabled=[SLICE]) is False


def test_static_is_fine_where_enabled_is_not_asked():
    assert units_running(UNITS, [IDLE]) is True


def test_anything_but_the_facts_dict_is_refused():
    with pytest.raises(AnsibleFilterError, match="cpuinfer_units"):
        units_running(None, [SLICE])
