"""_paths: one spelling per file, and no way out of the root through a linked directory."""

import os

import pytest

from ansible_collections.cpuinfer.llm.plugins.module_utils._paths import (
    link_problem,
    linked_ancestor,
    normal_path,
    path_problem,
    within,
)


@pytest.mark.parametrize("given, normal", [
    ("/etc/x", "/etc/x"),
    ("/etc//x", "/etc/x"),
    ("//etc/x", "/etc/x"),
    ("/etc/./x", "/etc/x"),
    ("/etc/x/", "/etc/x"),
    ("/etc/x/.", "/etc/x"),
    ("/", "/"),
    ("///", "/"),
])
def test_one_spelling(given, normal):
    assert normal_path(given) == normal


@pytest.mark.parametrize("given", ["etc/x", "", "/etc/../x", "/etc/x/..", "/etc/x\x00y", None, 5, b"/etc/x", ["/etc"]])
def test_not_a_path(given):
    assert normal_path(given) is None
    assert path_problem("files path", given) == (
        None, "files path: %r is not an absolute path below / without '..' or NUL bytes" % (given,))


def test_the_root_itself_only_where_allowed():
    assert path_problem("store", "/")[1] is not None
    assert path_problem("report", "//", allow_root=True) == ("/", None)


def test_a_linked_directory_on_the_way_is_found(tmp_path):
    (tmp_path / "etc").mkdir()
    outside = tmp_path.parent / (tmp_path.name + "-outside")
    outside.mkdir()
    os.symlink(str(outside), str(tmp_path / "etc" / "demo.d"))
    assert linked_ancestor(str(tmp_path), "/etc/demo.d/x.conf") == ("/etc/demo.d", str(outside))
    assert linked_ancestor(str(tmp_path), "/etc/demo.d/sub/x.conf") == ("/etc/demo.d", str(outside))
    problem = link_problem("files path", str(tmp_path), "/etc/demo.d/x.conf")
    assert problem.startswith("files path: /etc/demo.d/x.conf leads through /etc/demo.d, a symbolic link to ")


def test_a_link_inside_the_root_is_refused_too(tmp_path):
    """Root / has no outside, but the file would still have two names."""
    (tmp_path / "etc" / "real").mkdir(parents=True)
    os.symlink("real", str(tmp_path / "etc" / "alias"))
    assert linked_ancestor(str(tmp_path), "/etc/alias/x") == ("/etc/alias", "real")


def test_no_link_no_problem(tmp_path):
    (tmp_path / "etc").mkdir()
    assert linked_ancestor(str(tmp_path), "/etc/missing/deeper/x") is None
    assert linked_ancestor(str(tmp_path), "/etc/x") is None
    assert link_problem("dropin", str(tmp_path), "/etc/x") is None


def test_the_path_itself_is_not_an_ancestor(tmp_path):
    """A link at the path itself is file_or_directory's to refuse (it names what it was doing)."""
    (tmp_path / "etc").mkdir()
    os.symlink("/elsewhere", str(tmp_path / "etc" / "x"))
    assert linked_ancestor(str(tmp_path), "/etc/x") is None


def test_within_is_the_directory_itself_or_below_it_not_a_name_that_starts_alike():
    assert within("/etc/demo", "/etc/demo") and within("/etc/demo/x.conf", "/etc/demo")
    assert not within("/etc/demo.d/x.conf", "/etc/demo") and not within("/etc", "/etc/demo")
