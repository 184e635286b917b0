import pytest

from ansible_collections.cpuinfer.llm.plugins.modules import host_facts

from kernel_tree import cpu_tree, kunpeng_tree, phytium_tree, snapshot, write_tree, xeon_tree


def facts_of(run_module, root):
    failed, result = run_module(host_facts, {"root": str(root)})
    assert not failed, result
    assert result["changed"] is False
    return result["ansible_facts"]["cpuinfer"]


def test_xeon(tmp_path, run_module):
    xeon_tree(tmp_path)
    facts = facts_of(run_module, tmp_path)
    assert facts["platform"] == "xeon" and facts["arch"] == "x86_64" and facts["vendor"] == "GenuineIntel"
    assert (facts["sockets"], facts["physical_cores"], facts["logical_cpus"]) == (2, 32, 64)
    assert facts["numa_nodes"] == [{"id": 0, "cpus": "0-15,32-47"}, {"id": 1, "cpus": "16-31,48-63"}]
    assert facts["l3_domains"] == ["0-15,32-47", "16-31,48-63"]
    assert facts["core_cpus"][0] == "0,32"
    assert {"avx2", "fma", "f16c", "avx512f", "avx512_vnni", "sse4_2"} <= set(facts["isa"])
    assert "neon" not in facts["isa"]
    assert facts["rdt"]["l3_cat"] and facts["rdt"]["l3_cdp"] and facts["rdt"]["mba"] and facts["rdt"]["l3_mon"]
    assert not facts["rdt"]["l2_cat"] and not facts["rdt"]["mounted"] and not facts["rdt"]["kernel"]
    assert facts["llama_build_class"] == "x86-avx512"
    assert "-DGGML_AVX512=ON" in facts["llama_cmake_args"] and "-DGGML_AVX512_VNNI=ON" in facts["llama_cmake_args"]
    assert "-DGGML_NATIVE=OFF" in facts["llama_cmake_args"]
    assert facts["cgroup"] == {"version": 2, "controllers": ["cpu", "cpuset", "hugetlb", "io", "memory", "pids"],
                               "cpu_idle": False}


def test_kunpeng_920_from_midr(tmp_path, run_module):
    kunpeng_tree(tmp_path)
    facts = facts_of(run_module, tmp_path)
    assert facts["platform"] == "kunpeng" and facts["arch"] == "aarch64" and facts["vendor"] == "HiSilicon"
    assert facts["model_name"].startswith("Kunpeng 920")
    assert (facts["sockets"], facts["physical_cores"], facts["logical_cpus"]) == (2, 128, 128)
    assert len(facts["numa_nodes"]) == 4 and facts["numa_nodes"][1] == {"id": 1, "cpus": "32-63"}
    assert facts["l3_domains"] == ["0-31", "32-63", "64-95", "96-127"]
    assert {"neon", "dotprod", "fp16"} <= set(facts["isa"]) and "sve" not in facts["isa"]
    assert facts["llama_cmake_args"] == ["-DGGML_NATIVE=OFF", "-DGGML_CPU_ARM_ARCH=armv8.2-a+dotprod+fp16"]
    assert not any(facts["rdt"][k] for k in ("l3_cat", "l3_cdp", "l2_cat", "mba", "l3_mon"))


def test_phytium_from_cpuinfo_only(tmp_path, run_module):
    phytium_tree(tmp_path)
    facts = facts_of(run_module, tmp_path)
    assert facts["platform"] == "phytium" and facts["vendor"] == "Phytium"
    assert facts["model_name"] == "Phytium FTC662 (FT-2000+/64)"
    assert len(facts["numa_nodes"]) == 8
    assert facts["isa"] == ["neon"]
    assert facts["llama_cmake_args"] == ["-DGGML_NATIVE=OFF", "-DGGML_CPU_ARM_ARCH=armv8-a"]


def test_other_arm_is_plain_aarch64(tmp_path, run_module):
    block = "Features\t: fp asimd asimddp asimdhp\nCPU implementer\t: 0x41\nCPU part\t: 0xd0c"
    cpu_tree(tmp_path, sockets=1, cores_per_socket=2, threads_per_core=1, cpuinfo_block=block, midr=0x410FD0C1)
    facts = facts_of(run_module, tmp_path)
    assert facts["platform"] == "aarch64" and facts["model_name"] == "Neoverse-N1"
    assert facts["llama_build_class"] == "arm-armv8.2-a+dotprod+fp16"


def test_amd_epyc_is_plain_x86_64_and_avx2_class(tmp_path, run_module):
    block = "vendor_id\t: AuthenticAMD\nmodel name\t: AMD EPYC 7763\nflags\t\t: sse4_2 avx avx2 fma f16c bmi2"
    cpu_tree(tmp_path, sockets=1, cores_per_socket=4, threads_per_core=2, cpuinfo_block=block)
    facts = facts_of(run_module, tmp_path)
    assert facts["platform"] == "x86_64"
    assert facts["llama_build_class"] == "x86-avx2"
    assert "-DGGML_AVX512=OFF" in facts["llama_cmake_args"] and "-DGGML_BMI2=ON" in facts["llama_cmake_args"]


@pytest.mark.parametrize("cgroup,version", [("hybrid", "hybrid"), ("v1", 1)])
def test_cgroup_hierarchy_versions(tmp_path, run_module, cgroup, version):
    xeon_tree(tmp_path, cgroup=cgroup)
    assert facts_of(run_module, tmp_path)["cgroup"]["version"] == version


def test_resctrl_mounted_with_info(tmp_path, run_module):
    xeon_tree(tmp_path)
    write_tree(tmp_path, {
        "/proc/mounts": "cgroup2 /sys/fs/cgroup cgroup2 rw 0 0\nresctrl /sys/fs/resctrl resctrl rw 0 0\n",
        "/proc/filesystems": "nodev\tcgroup2\nnodev\tresctrl\n",
        "/sys/fs/resctrl/info/L2/cbm_mask": "ff\n",
    })
    rdt = facts_of(run_module, tmp_path)["rdt"]
    assert rdt["mounted"] and rdt["kernel"] and rdt["l2_cat"]


def test_host_without_numa_dirs_reports_one_node(tmp_path, run_module):
    xeon_tree(tmp_path)
    for path in sorted((tmp_path / "sys/devices/system/node").rglob("*"), reverse=True):
        path.unlink() if path.is_file() else path.rmdir()
    assert facts_of(run_module, tmp_path)["numa_nodes"] == [{"id": 0, "cpus": "0-63"}]


def test_reads_only_and_changes_nothing(tmp_path, run_module):
    kunpeng_tree(tmp_path)
    before = snapshot(tmp_path)
    facts_of(run_module, tmp_path)
    assert snapshot(tmp_path) == before


def test_unreadable_host_fails_with_the_file(tmp_path, run_module):
    failed, result = run_module(host_facts, {"root": str(tmp_path)})
    assert failed and "proc/cpuinfo" in result["msg"]


def test_amx_is_reported_but_never_built_for(tmp_path, run_module):
    """A CPU can list amx_tile and still fault on its first tile instruction (a virtual Sapphire Rapids
    did, in libggml-cpu): the class stays x86-avx512 with AMX off."""
    from kernel_tree import X86_FLAGS, cpu_tree

    block = ("vendor_id\t: GenuineIntel\nmodel name\t: Intel(R) Xeon(R) Platinum 8480+\nflags\t\t: %s avx512vbmi "
             "avx512_bf16 amx_tile amx_int8 amx_bf16" % X86_FLAGS)
    cpu_tree(tmp_path, sockets=1, cores_per_socket=4, threads_per_core=1, cpuinfo_block=block)
    failed, result = run_module(host_facts, {"root": str(tmp_path)})
    facts = result["ansible_facts"]["cpuinfer"]
    assert not failed and {"amx_tile", "amx_int8"} <= set(facts["isa"])
    assert facts["llama_build_class"] == "x86-avx512"
    assert "-DGGML_AMX_INT8=OFF" in facts["llama_cmake_args"] and "-DGGML_AMX_INT8=ON" not in facts["llama_cmake_args"]


def test_runtime_versions_from_the_libraries(tmp_path, run_module):
    xeon_tree(tmp_path)
    libs = tmp_path / "usr" / "lib" / "x86_64-linux-gnu"
    libs.mkdir(parents=True)
    (libs / "libc.so.6").write_bytes(b"\x7fELF...GNU C Library (Debian GLIBC 2.36-9+deb12u4) stable release version 2.36.\n")
    (libs / "libstdc++.so.6.0.30").write_bytes(b"\x7fELF")
    (libs / "libstdc++.so.6").symlink_to("libstdc++.so.6.0.30")
    (libs / "systemd").mkdir()
    (libs / "systemd" / "libsystemd-shared-252.so").write_bytes(b"\x7fELF")
    assert facts_of(run_module, tmp_path)["runtime"] == {"glibc": "2.36", "glibcxx": "3.4.30", "systemd": 252}


def test_runtime_unknown_without_libraries(tmp_path, run_module):
    xeon_tree(tmp_path)
    lib64 = tmp_path / "lib64"
    lib64.mkdir()
    (lib64 / "libc.so.6").write_bytes(b"\x7fELF musl has no banner")
    assert facts_of(run_module, tmp_path)["runtime"] == {"glibc": None, "glibcxx": None, "systemd": None}


def test_cpufreq_governor_of_the_first_online_cpu_or_none(tmp_path, run_module):
    xeon_tree(tmp_path)
    assert facts_of(run_module, tmp_path)["cpufreq_governor"] is None  # a VM: no cpufreq
    governor = tmp_path / "sys/devices/system/cpu/cpu0/cpufreq/scaling_governor"
    governor.parent.mkdir(parents=True)
    governor.write_text("schedutil\n")
    assert facts_of(run_module, tmp_path)["cpufreq_governor"] == "schedutil"


def test_records_report_named_files_and_the_files_in_named_directories(tmp_path, run_module):
    import hashlib
    import os

    xeon_tree(tmp_path)
    write_tree(tmp_path, {"/var/lib/cpuinfer/host_facts.json": "{}\n", "/var/lib/cpuinfer/releases/llama_server.json": "x"})
    os.chmod(str(tmp_path / "var/lib/cpuinfer/host_facts.json"), 0o640)
    before = snapshot(tmp_path)
    failed, result = run_module(host_facts, {"root": str(tmp_path),
                                             "records": ["/var/lib/cpuinfer", "/etc/absent.json", "/nowhere"]})
    assert not failed, result
    records = result["ansible_facts"]["cpuinfer_records"]
    assert records == {"/var/lib/cpuinfer/host_facts.json": {"sha256": hashlib.sha256(b"{}\n").hexdigest(), "mode": "0640",
                                                             "uid": os.getuid(), "gid": os.getgid()},
                       "/etc/absent.json": None, "/nowhere": None}
    assert snapshot(tmp_path) == before


def test_records_without_the_option_are_empty_and_a_relative_path_is_refused(tmp_path, run_module):
    xeon_tree(tmp_path)
    assert run_module(host_facts, {"root": str(tmp_path)})[1]["ansible_facts"]["cpuinfer_records"] == {}
    failed, result = run_module(host_facts, {"root": str(tmp_path), "records": ["var/lib/cpuinfer", "/a/../b"]})
    assert failed and "'var/lib/cpuinfer' is not an absolute path" in result["msg"] and "'/a/../b'" in result["msg"]


def test_a_cpuinfo_with_bytes_that_are_not_utf8_is_read(tmp_path, run_module):
    """A firmware's model name in Latin-1 once crashed the module (UnicodeDecodeError)."""
    xeon_tree(tmp_path)
    cpuinfo = tmp_path / "proc" / "cpuinfo"
    cpuinfo.write_bytes(cpuinfo.read_bytes().replace(b"model name\t: ", b"model name\t: Xeon\xae \xff "))
    facts = facts_of(run_module, tmp_path)
    assert facts["platform"] == "xeon" and facts["llama_build_class"] == "x86-avx512"


def test_isolation_as_the_running_kernel_keeps_it_and_booted_with_it(tmp_path, run_module):
    xeon_tree(tmp_path)
    assert facts_of(run_module, tmp_path)["isolation"] == {"nohz_full": None, "isolated": None, "cmdline": {}}
    (tmp_path / "sys/devices/system/cpu/nohz_full").write_text("1-3\n")
    (tmp_path / "proc").mkdir(exist_ok=True)
    (tmp_path / "proc/cmdline").write_text("BOOT_IMAGE=/vmlinuz root=/dev/sda1 nohz_full=1-3 rcu_nocbs=1-3 irqaffinity=0 quiet\n")
    isolation = facts_of(run_module, tmp_path)["isolation"]
    assert isolation["nohz_full"] == "1-3"
    assert isolation["cmdline"] == {"nohz_full": "1-3", "rcu_nocbs": "1-3", "irqaffinity": "0"}
    assert facts_of(run_module, tmp_path)["tuned"] == {"installed": False, "running": False, "active_profile": None}


def test_units_are_reported_as_systemd_shows_them_and_not_asked_below_a_test_root(tmp_path, run_module, monkeypatch):
    from ansible_collections.cpuinfer.llm.plugins.module_utils import _systemd_units

    xeon_tree(tmp_path)
    assert run_module(host_facts, {"root": str(tmp_path), "units": ["cpuinfer-*"]})[1]["ansible_facts"]["cpuinfer_units"] == {}
    asked = []

    def shown(run, root, patterns):
        asked.append((root, patterns))
        return {"cpuinfer-besteffort.slice": {"active": "active", "file": "enabled"}}

    monkeypatch.setattr(_systemd_units, "unit_states", shown)
    failed, result = run_module(host_facts, {"root": str(tmp_path), "units": ["cpuinfer-*"]})
    assert not failed and asked == [(str(tmp_path), ["cpuinfer-*"])]
    assert result["ansible_facts"]["cpuinfer_units"] == {"cpuinfer-besteffort.slice": {"active": "active", "file": "enabled"}}
