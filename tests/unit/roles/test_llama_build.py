"""llama_server's engine build: cache keys, preloaded caches, the check of a build against its hosts
(ELF machine, GLIBC_/GLIBCXX_ versions), the platform tag of the wheel, the build root's commands."""

import base64
import hashlib
import json
import os
import platform
import shutil
import subprocess
import sys
import tarfile
import zipfile
from pathlib import Path

import pytest

FILES = Path(__file__).resolve().parents[3] / "roles" / "llama_server" / "files"
sys.path.insert(0, str(FILES))

import artifact_check  # noqa: E402
import build_root  # noqa: E402
import engine_sources  # noqa: E402
import llama_build  # noqa: E402

# A real ELF file of this machine: the interpreter running the tests.
REAL_ELF = os.path.realpath(sys.executable)


def argv(cache, *extra, machine="x86_64", glibc="2.36"):
    return ["--version", "0.3.36", "--build-class", "x86-avx2", "--cache", str(cache), "--machine", machine,
            "--python-version", "3.11", "--distribution", "Debian", "--release", "bookworm", "--glibc", glibc,
            "--cmake-arg=-DGGML_NATIVE=OFF"] + list(extra)


def preload(cache, args):
    """A cache entry made elsewhere: KEY.tar.gz holding KEY/engine/llama-server (a real ELF) and a manifest."""
    key = llama_build.cache_key(llama_build.parse_args(args))
    staging = cache / "staging" / key
    (staging / "engine").mkdir(parents=True)
    shutil.copy(REAL_ELF, staging / "engine" / "llama-server")
    (staging / "manifest.json").write_text(json.dumps({"key": key}))
    with tarfile.open(cache / (key + ".tar.gz"), "w:gz") as tar:
        tar.add(staging, arcname=key)
    shutil.rmtree(cache / "staging")
    return key


def newest_glibc_needed():
    return artifact_check.elf_requirements(REAL_ELF)[1]["GLIBC"]


def older_than(version):
    major, minor = (int(x) for x in version.split("."))
    return "%d.%d" % (major, minor - 1)


def test_a_build_that_needs_a_newer_glibc_than_the_hosts_is_refused(tmp_path, capsys):
    needed = newest_glibc_needed()
    hosts = older_than(needed)
    args = argv(tmp_path, glibc=hosts)
    preload(tmp_path, args)
    assert llama_build.main(args) == 3
    err = capsys.readouterr().err
    assert "engine/llama-server needs GLIBC_%s, the hosts have GLIBC_%s" % (needed, hosts) in err
    assert capsys.readouterr().out == ""  # no build handed out


def test_a_preloaded_build_of_another_machine_is_refused_by_name(tmp_path, capsys):
    args = argv(tmp_path, machine="aarch64", glibc="9.99")
    preload(tmp_path, args)
    assert llama_build.main(args) == 3
    assert "engine/llama-server is built for EM_X86_64, the hosts are aarch64 (EM_AARCH64)" in capsys.readouterr().err


def test_a_preloaded_build_that_fits_is_used_without_building(tmp_path, capsys):
    args = argv(tmp_path, "--build-root", "none", glibc="9.99")
    key = preload(tmp_path, args)
    assert llama_build.main(args) == 0
    result = json.loads(capsys.readouterr().out)
    assert result == {"key": key, "archive": str(tmp_path / (key + ".tar.gz")), "built": False, "manifest": {"key": key}}


def test_the_engines_own_libraries_must_lie_beside_it(tmp_path, monkeypatch):
    """ik_llama.cpp's tree left libllama.so in src/: the first archive of it could not start anywhere."""
    engine = tmp_path / "engine"
    engine.mkdir()
    shutil.copy(REAL_ELF, engine / "llama-server")
    monkeypatch.setattr(artifact_check, "needed_libraries", lambda path: ["libllama.so", "libggml.so", "libc.so.6"])
    assert artifact_check.problems(str(tmp_path), platform.machine(), {}) == [
        "engine/llama-server needs libllama.so, libggml.so, not shipped beside it"]
    (engine / "libllama.so").write_bytes(b"")
    (engine / "libggml.so").write_bytes(b"")
    assert artifact_check.problems(str(tmp_path), platform.machine(), {}) == []


def test_own_toolchain_cannot_build_for_another_machine(tmp_path, capsys):
    other = "aarch64" if os.uname().machine != "aarch64" else "x86_64"
    assert llama_build.main(argv(tmp_path, "--build-root", "none", machine=other)) == 2
    assert "cannot build for %s hosts" % other in capsys.readouterr().err


def test_plan_builds_nothing(tmp_path, capsys):
    assert llama_build.main(argv(tmp_path, "--plan")) == 0
    assert json.loads(capsys.readouterr().out)["built"] is True
    assert os.listdir(tmp_path) == []


def test_the_key_follows_release_machine_python_and_flags():
    base = llama_build.cache_key(llama_build.parse_args(argv("/c")))
    assert base.startswith("0.3.36-x86-avx2-bookworm-")
    for changed in (["--release", "trixie"], ["--python-version", "3.12"], ["--cmake-arg=-DGGML_AVX512=ON"]):
        assert llama_build.cache_key(llama_build.parse_args(argv("/c") + changed)) != base
    assert llama_build.cache_key(llama_build.parse_args(argv("/c", machine="aarch64"))) != base


def test_each_source_keys_its_own_builds():
    mainline = llama_build.cache_key(llama_build.parse_args(argv("/c")))
    fork = llama_build.cache_key(llama_build.parse_args(argv("/c", "--engine", "ik_llama.cpp")))
    assert fork.startswith("ik-0.3.36-x86-avx2-bookworm-") and fork[len("ik-"):] != mainline


def test_the_forks_tree_gets_the_class_in_its_own_terms():
    arm = engine_sources.class_args("ik_llama.cpp", ["-DGGML_NATIVE=OFF", "-DGGML_CPU_ARM_ARCH=armv8.2-a+dotprod+fp16"])
    assert arm == ["-DGGML_NATIVE=OFF", "-DCMAKE_C_FLAGS=-march=armv8.2-a+dotprod+fp16",
                   "-DCMAKE_CXX_FLAGS=-march=armv8.2-a+dotprod+fp16"]
    x86 = engine_sources.class_args("ik_llama.cpp", ["-DGGML_AVX512=ON", "-DCMAKE_CXX_FLAGS=-g"])
    assert x86 == ["-DGGML_AVX512=ON", "-DCMAKE_C_FLAGS=-mavx512dq -mavx512vl", "-DCMAKE_CXX_FLAGS=-g -mavx512dq -mavx512vl"]
    assert engine_sources.class_args("ik_llama.cpp", ["-DGGML_AVX2=ON"]) == ["-DGGML_AVX2=ON"]
    assert engine_sources.class_args("llama.cpp", ["-DGGML_CPU_ARM_ARCH=armv8-a"]) == ["-DGGML_CPU_ARM_ARCH=armv8-a"]


def test_an_option_the_fork_lacks_is_refused_before_building(tmp_path, capsys):
    args = argv(tmp_path, "--engine", "ik_llama.cpp", "--cmake-arg=-DGGML_CPU_KLEIDIAI=ON", machine="aarch64")
    assert llama_build.main(args) == 2
    assert "ik_llama.cpp has no KleidiAI kernels" in capsys.readouterr().err
    assert not [name for name in os.listdir(tmp_path) if name.endswith(".tar.gz")]


def test_both_trees_build_the_server_and_the_bench_tool_from_their_vendored_source():
    for source, vendor in (("llama.cpp", "/s/vendor/llama.cpp"), ("ik_llama.cpp", "/s/vendor/ik_llama.cpp")):
        configure, build = llama_build.compile_steps(source, "/s", "/b", ["-DGGML_AVX2=ON"], [])
        assert configure[:4] == ["cmake", "-S", vendor, "-B"] and "-DLLAMA_BUILD_SERVER=ON" in configure
        # the libraries beside the binaries: the fork leaves them in each component's directory otherwise
        assert "-DCMAKE_LIBRARY_OUTPUT_DIRECTORY=/b/bin" in configure
        assert build[3:6] == ["--target", "llama-server", "llama-bench"]
        assert build[6:-2] == list(engine_sources.targets(source)[2:])


def _record_hash(data):
    return "sha256=" + base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=").decode()


def test_the_library_free_wheel_is_retagged_for_the_hosts(tmp_path):
    wheel = tmp_path / "pkg-1.0-py3-none-linux_x86_64.whl"
    tag = b"Wheel-Version: 1.0\nRoot-Is-Purelib: false\nTag: py3-none-linux_x86_64\n"
    with zipfile.ZipFile(wheel, "w") as archive:
        archive.writestr("pkg/__init__.py", "")
        archive.writestr("pkg-1.0.dist-info/WHEEL", tag)
        archive.writestr("pkg-1.0.dist-info/RECORD", "pkg/__init__.py,,0\npkg-1.0.dist-info/WHEEL,%s,%d\n"
                         "pkg-1.0.dist-info/RECORD,,\n" % (_record_hash(tag), len(tag)))
    retagged = llama_build.retag_wheel(str(wheel), "aarch64")
    assert os.path.basename(retagged) == "pkg-1.0-py3-none-linux_aarch64.whl" and not wheel.exists()
    with zipfile.ZipFile(retagged) as archive:
        new_tag = archive.read("pkg-1.0.dist-info/WHEEL")
        record = archive.read("pkg-1.0.dist-info/RECORD").decode()
    assert b"Tag: py3-none-linux_aarch64\n" in new_tag
    assert "pkg-1.0.dist-info/WHEEL,%s,%d" % (_record_hash(new_tag), len(new_tag)) in record.splitlines()
    assert llama_build.retag_wheel(retagged, "aarch64") == retagged


def test_build_roots_are_debian_releases_only():
    assert build_root.root_key("Debian", "bookworm", "x86_64", "http://m").startswith("bookworm-x86_64-")
    with pytest.raises(build_root.BuildRootError, match="no build root for Ubuntu jammy.*llama_server_build_host"):
        build_root.root_key("Ubuntu", "jammy", "x86_64", "http://m")
    assert build_root.packages("x86_64") == ["cmake", "ninja-build", "crossbuild-essential-arm64"]


def test_cross_compiling_only_for_another_machine():
    assert build_root.cmake_toolchain_args("x86_64", "x86_64") == []
    cross = build_root.cmake_toolchain_args("aarch64", "x86_64")
    assert "-DCMAKE_CXX_COMPILER=aarch64-linux-gnu-g++" in cross and "-DCMAKE_SYSTEM_PROCESSOR=aarch64" in cross


def test_entering_the_root_passes_values_as_arguments_never_as_shell_text():
    command = build_root.enter_argv("/cache/roots/r; rm -rf /", ["cmake", "--build", "b"], "/work/x")
    script = command[command.index("-c") + 1]
    assert "/cache" not in script and "cmake" not in script
    assert command[-3:] == ["cmake", "--build", "b"] and "/cache/roots/r; rm -rf /" in command


def test_two_builds_at_once_make_one_root(tmp_path, monkeypatch):
    """Two plays building two classes at once wait for one mmdebstrap; both get the finished tree."""
    import io
    import threading
    import time

    monkeypatch.setattr(build_root.shutil, "which", lambda name: "/usr/bin/" + name)
    made = []

    def run(argv):
        if argv[0] == "mmdebstrap":
            made.append(argv)
            time.sleep(0.3)
            tarball = argv[-3]
            (tmp_path / "etc").mkdir(exist_ok=True)
            (tmp_path / "etc" / "debian_version").write_text("12.8\n")
            with tarfile.open(tarball, "w") as tar:
                tar.add(tmp_path / "etc", arcname="./etc")
        else:
            subprocess.run(argv, check=True)

    trees = []
    workers = [threading.Thread(target=lambda: trees.append(
        build_root.ensure(str(tmp_path / "cache"), "Debian", "bookworm", "http://m", run, io.StringIO()))) for dummy in range(2)]
    for worker in workers:
        worker.start()
    for worker in workers:
        worker.join()
    assert len(made) == 1 and len(trees) == 2 and trees[0] == trees[1]
    assert (Path(trees[0]) / "etc" / "debian_version").read_text() == "12.8\n"
    assert (Path(trees[0]) / ".cpuinfer-ready").exists()
    assert sorted(os.listdir(tmp_path / "cache" / "roots")) == sorted([os.path.basename(trees[0]), ".lock-" + os.path.basename(trees[0])])
