import pytest

from ansible_collections.cpuinfer.llm.plugins.module_utils._sizes import SizeError, format_size, parse_size, size_le


@pytest.mark.parametrize("value,parsed", [
    ("8G", 8 << 30), ("512M", 512 << 20), ("512m", 512 << 20), ("1K", 1024), ("4096", 4096),
    (4096, 4096), ("max", "max"), ("MAX", "max"), ("2GiB", 2 << 30), ("1T", 1 << 40),
])
def test_parse(value, parsed):
    assert parse_size(value) == parsed


@pytest.mark.parametrize("value", ["8X", "-1G", "1.5G", "", "G", True, -5])
def test_parse_refuses(value):
    with pytest.raises(SizeError):
        parse_size(value)


@pytest.mark.parametrize("value,text", [(8 << 30, "8G"), (1536 << 20, "1536M"), (1000, "1000"), ("max", "max"), (0, "0")])
def test_format(value, text):
    assert format_size(value) == text


def test_order_treats_max_as_largest():
    assert size_le(1, "max")
    assert size_le("max", "max")
    assert not size_le("max", 1 << 40)
    assert size_le(5, 5) and not size_le(6, 5)
