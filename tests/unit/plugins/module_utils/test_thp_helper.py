import pytest

from ansible_collections.cpuinfer.llm.plugins.module_utils import _thp
from kernel_tree import THP, thp_tree, write_tree


def test_read_state_normalises_selections_and_numbers(tmp_path):
    thp_tree(tmp_path)
    values, choices = _thp.read_state(str(tmp_path))
    assert values["enabled"] == "always" and values["defrag"] == "madvise"
    assert values["khugepaged.pages_to_scan"] == 4096 and values["khugepaged.defrag"] == 1
    assert choices["defrag"] == ["always", "defer", "defer+madvise", "madvise", "never"]


def test_no_thp_says_which_file_is_missing(tmp_path):
    with pytest.raises(_thp.ThpError, match="transparent_hugepage/enabled is missing"):
        _thp.read_state(str(tmp_path))


def test_a_selection_without_brackets_cannot_be_read(tmp_path):
    thp_tree(tmp_path, enabled="always madvise never")
    with pytest.raises(_thp.ThpError, match="no \\[selected\\] choice"):
        _thp.read_state(str(tmp_path))


def test_a_garbled_khugepaged_number_is_named(tmp_path):
    thp_tree(tmp_path)
    write_tree(tmp_path, {THP + "/khugepaged/pages_to_scan": "4k\n"})
    with pytest.raises(_thp.ThpError, match="pages_to_scan holds '4k'"):
        _thp.read_state(str(tmp_path))


def test_validate_lists_every_problem_at_once(tmp_path):
    thp_tree(tmp_path)
    current, choices = _thp.read_state(str(tmp_path))
    wanted = {"enabled": "sometimes", "khugepaged.defrag": 2, "khugepaged.pages_to_scan": 0,
              "khugepaged.max_ptes_none": 512, "khugepaged.scan_sleep_millisecs": 2 ** 32, "khugepaged.nothing": 1}
    problems = "\n".join(_thp.validate(wanted, current, choices))
    for expected in ("enabled=sometimes is not offered", "khugepaged.defrag must be 0 or 1",
                     "pages_to_scan must be at least 1", "max_ptes_none must be at most 511",
                     "scan_sleep_millisecs must be in 0..4294967295", "this kernel has no"):
        assert expected in problems
    assert _thp.validate({"enabled": "never", "khugepaged.max_ptes_none": 511}, current, choices) == []


def test_the_huge_page_size_comes_from_the_kernel_when_it_says(tmp_path):
    assert _thp.small_pages_per_huge_page(str(tmp_path), 4096) == 512
    write_tree(tmp_path, {THP + "/hpage_pmd_size": "536870912\n"})  # 64K pages on arm64: 512M huge pages
    assert _thp.small_pages_per_huge_page(str(tmp_path), 65536) == 8192
    write_tree(tmp_path, {THP + "/hpage_pmd_size": "big\n"})
    with pytest.raises(_thp.ThpError, match="not a size in bytes"):
        _thp.small_pages_per_huge_page(str(tmp_path), 4096)


def test_the_tmpfiles_dropin_round_trips():
    values = {"enabled": "madvise", "khugepaged.defrag": 0}
    text = _thp.render_dropin(values, "# managed\n")
    assert "w /sys/kernel/mm/transparent_hugepage/khugepaged/defrag - - - - 0\n" in text
    assert _thp.parse_dropin(text + "w /etc/other - - - - 1\n") == values
