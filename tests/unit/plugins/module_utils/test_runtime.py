"""The host's C and C++ runtime versions, read from the libraries under a root."""

from ansible_collections.cpuinfer.llm.plugins.module_utils import _runtime


def _library(root, directory, name, data=b"\x7fELF", target=None):
    path = root / directory
    path.mkdir(parents=True, exist_ok=True)
    if target:
        (path / target).write_bytes(data)
        (path / name).symlink_to(target)
    else:
        (path / name).write_bytes(data)


def test_rpm_layout_in_lib64(tmp_path):
    _library(tmp_path, "usr/lib64", "libc.so.6", b"junk GNU C Library (GNU libc) stable release version 2.34.\n")
    _library(tmp_path, "usr/lib64", "libstdc++.so.6", target="libstdc++.so.6.0.29")
    _library(tmp_path, "usr/lib64/systemd", "libsystemd-shared-252.so")
    assert _runtime.runtime(str(tmp_path)) == {"glibc": "2.34", "glibcxx": "3.4.29", "systemd": 252}


def test_multiarch_directory_wins_over_a_plain_lib(tmp_path):
    _library(tmp_path, "usr/lib/aarch64-linux-gnu", "libc.so.6", b"GNU C Library (Debian GLIBC 2.36-9) release version 2.36.")
    _library(tmp_path, "usr/lib", "libc.so.6", b"GNU C Library release version 2.17.")
    assert _runtime.glibc_version(str(tmp_path)) == "2.36"


def test_unknown_names_and_missing_libraries_are_none(tmp_path):
    _library(tmp_path, "lib", "libstdc++.so.6", target="libstdc++-custom.so")
    _library(tmp_path, "usr/lib/systemd", "libsystemd-shared-custom.so")
    assert _runtime.runtime(str(tmp_path)) == {"glibc": None, "glibcxx": None, "systemd": None}


def test_systemd_release_from_its_shared_library_with_or_without_the_package_version(tmp_path):
    _library(tmp_path, "usr/lib/systemd", "libsystemd-shared-249.11-0ubuntu3.so")
    assert _runtime.systemd_version(str(tmp_path)) == 249
    _library(tmp_path, "usr/lib/x86_64-linux-gnu/systemd", "libsystemd-shared-255.so")
    assert _runtime.systemd_version(str(tmp_path)) == 255
