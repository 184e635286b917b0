import pytest

from ansible_collections.cpuinfer.llm.plugins.module_utils import _cpu_classes as classes

XEON = [{"processor": "0", "vendor_id": "GenuineIntel", "model name": "Intel(R) Xeon(R) Gold 6330",
         "flags": "fpu sse4_2 avx avx2 fma f16c bmi2 avx512f avx512bw avx512vl avx512_vnni amx_tile cat_l3 mba"}]
KUNPENG = [{"processor": "0", "Features": "fp asimd asimddp asimdhp fphp", "CPU implementer": "0x48", "CPU part": "0xd01"}]
PHYTIUM = [{"processor": "0", "Features": "fp asimd crc32", "CPU implementer": "0x70", "CPU part": "0x663"}]


@pytest.mark.parametrize("per_cpu, arch", [(XEON, "x86_64"), (KUNPENG, "aarch64"), (PHYTIUM, "aarch64"),
                                           ([{"processor": "0", "cpu": "POWER9"}], "other"), ([], "other")])
def test_the_architecture_from_cpuinfo(per_cpu, arch):
    assert classes.detect_arch({}, per_cpu) == arch


def test_xeon_kunpeng_phytium_told_apart():
    assert classes.identify("x86_64", {}, XEON, None)["platform"] == "xeon"
    amd = [dict(XEON[0], vendor_id="AuthenticAMD", **{"model name": "AMD EPYC 9654"})]
    assert classes.identify("x86_64", {}, amd, None)["platform"] == "x86_64"
    kunpeng = classes.identify("aarch64", {}, KUNPENG, None)
    assert (kunpeng["platform"], kunpeng["vendor"], kunpeng["model_name"]) == ("kunpeng", "HiSilicon", "Kunpeng 920 (TaiShan v110)")
    phytium = classes.identify("aarch64", {}, PHYTIUM, None)
    assert (phytium["platform"], phytium["model_name"]) == ("phytium", "Phytium FTC663 (S2500)")


def test_midr_wins_over_cpuinfo_and_unknown_parts_are_named():
    neoverse = classes.identify("aarch64", {}, KUNPENG, 0x413FD0C1)
    assert (neoverse["platform"], neoverse["model_name"]) == ("aarch64", "Neoverse-N1")
    odd = classes.identify("aarch64", {}, [{"Features": "fp", "CPU implementer": "0x51", "CPU part": "0x801"}], None)
    assert (odd["vendor"], odd["model_name"]) == ("implementer 0x51", "part 0x801")


def test_isa_is_normalised_per_architecture():
    assert classes.normalised_isa("aarch64", {"asimd", "asimddp", "fphp", "asimdhp"}) == ["dotprod", "fp16", "neon"]
    assert classes.normalised_isa("x86_64", {"avx512vbmi", "sse4_2", "nonsense"}) == ["avx512_vbmi", "sse4_2"]
    assert classes.normalised_isa("other", {"avx2"}) == []


def test_rdt_from_flags_on_x86_and_from_resctrl_elsewhere():
    x86 = classes.rdt_support("x86_64", {"cat_l3", "cqm_llc"}, set(), False, True)
    assert x86["l3_cat"] and x86["l3_mon"] and not x86["mba"] and not x86["l3_cdp"]
    arm = classes.rdt_support("aarch64", {"cat_l3"}, {"MB"}, True, True)
    assert not arm["l3_cat"] and arm["mba"] and arm["mounted"]


@pytest.mark.parametrize("arch, platform, isa, build_class, expected", [
    ("x86_64", "xeon", ["avx", "avx2", "fma", "f16c", "bmi2", "avx512f", "avx512bw", "avx512vl", "avx512_vnni", "amx_tile"],
     "x86-avx512", ["-DGGML_AVX512=ON", "-DGGML_AVX512_VNNI=ON", "-DGGML_AVX512_BF16=OFF", "-DGGML_AMX_TILE=OFF"]),
    ("x86_64", "x86_64", ["avx", "avx2", "fma", "f16c"], "x86-avx2", ["-DGGML_BMI2=OFF", "-DGGML_AVX512=OFF"]),
    ("x86_64", "x86_64", ["avx"], "x86-avx", ["-DGGML_AVX=ON", "-DGGML_AVX2=OFF"]),
    ("x86_64", "x86_64", ["sse4_2"], "x86-sse", ["-DGGML_AVX=OFF"]),
    ("aarch64", "kunpeng", ["neon", "dotprod", "fp16"], "arm-armv8.2-a+dotprod+fp16", ["-DGGML_CPU_ARM_ARCH=armv8.2-a+dotprod+fp16"]),
    ("aarch64", "phytium", ["neon", "dotprod"], "arm-armv8-a", ["-DGGML_CPU_ARM_ARCH=armv8-a"]),
    ("aarch64", "aarch64", ["neon", "dotprod", "i8mm"], "arm-armv8.2-a+dotprod+i8mm", []),
])
def test_one_portable_build_class_per_cpu(arch, platform, isa, build_class, expected):
    level, args = classes.llama_build(arch, platform, isa)
    assert level == build_class and args[0] == "-DGGML_NATIVE=OFF"
    assert set(expected) <= set(args) and not any("native" in a.lower() and a != "-DGGML_NATIVE=OFF" for a in args)


def test_no_class_for_other_architectures():
    assert classes.llama_build("other", "other", ["avx2"]) == (None, [])
