import pytest

from ansible_collections.cpuinfer.llm.plugins.module_utils._decimal import is_decimal, is_signed_decimal, parse_int


@pytest.mark.parametrize("text", ["0", "12", "007"])
def test_ascii_digits_are_decimal(text):
    assert is_decimal(text) and is_signed_decimal(text)


@pytest.mark.parametrize("text", ["１２", "²", "٣", "", "-1", "1.0", " 1", "1\n", 12, None])
def test_anything_else_is_not_unsigned_decimal(text):
    assert not is_decimal(text)


def test_a_sign_is_allowed_only_where_asked():
    assert is_signed_decimal("-12") and not is_decimal("-12")
    assert not is_signed_decimal("--1") and not is_signed_decimal("+1")


def test_parse_int_strips_the_kernels_newline_and_names_what_it_read():
    assert parse_int(" -3\n", "perf_event_paranoid") == -3
    with pytest.raises(ValueError, match=r"cpu.weight: '１０' is not a decimal integer"):
        parse_int("１０", "cpu.weight")
    with pytest.raises(ValueError, match="not a decimal integer"):
        parse_int(10, "a number, not text")
