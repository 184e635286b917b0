"""record_current: a record host_facts reported is rewritten unless text, mode and owner all match."""

import hashlib

import pytest

from ansible.errors import AnsibleFilterError

from ansible_collections.cpuinfer.llm.plugins.plugin_utils._filter_records import record_current

PATH = "/var/lib/cpuinfer/host_facts.json"
TEXT = '{"platform": "xeon"}\n'


def _records(**changes):
    found = dict(sha256=hashlib.sha256(TEXT.encode("utf-8")).hexdigest(), mode="0640", uid=0, gid=0)
    found.update(changes)
    return {PATH: found}


def test_a_record_with_the_same_text_mode_and_owner_is_current():
    assert record_current(_records(), PATH, TEXT, "0640") is True
    assert record_current(_records(mode="640"), PATH, TEXT, "0640") is True


@pytest.mark.parametrize("records, text, mode", [
    (_records(), TEXT.replace("xeon", "kunpeng"), "0640"),
    (_records(mode="0644"), TEXT, "0640"),
    (_records(uid=1000), TEXT, "0640"),
    (_records(gid=1000), TEXT, "0640"),
    ({PATH: None}, TEXT, "0640"),
    ({}, TEXT, "0640"),
])
def test_anything_that_differs_or_is_unknown_is_not_current(records, text, mode):
    assert record_current(records, PATH, text, mode) is False


def test_something_other_than_host_facts_records_is_refused():
    with pytest.raises(AnsibleFilterError, match="cpuinfer_records"):
        record_current(["not", "a", "dict"], PATH, TEXT)
