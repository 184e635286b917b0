import pytest

from ansible_collections.cpuinfer.llm.plugins.module_utils._cpulist import CpuListError, format_cpulist, parse_cpulist


@pytest.mark.parametrize("text,cpus", [
    ("0-3,8", {0, 1, 2, 3, 8}),
    ("5", {5}),
    ("", set()),
    ("0-1,1-2", {0, 1, 2}),
    (" 2 , 4-5\n", {2, 4, 5}),
])
def test_parse(text, cpus):
    assert parse_cpulist(text) == cpus


@pytest.mark.parametrize("text", ["3-1", "a", "1-2-3", "1,,2", "-1", "0x3"])
def test_parse_refuses(text):
    with pytest.raises(CpuListError):
        parse_cpulist(text)


@pytest.mark.parametrize("cpus,text", [
    ({0, 1, 2, 3, 8}, "0-3,8"),
    (set(), ""),
    ({7, 5, 6, 1}, "1,5-7"),
])
def test_format(cpus, text):
    assert format_cpulist(cpus) == text


def test_round_trip():
    assert format_cpulist(parse_cpulist("0,2-4,6,7")) == "0,2-4,6-7"
