# -*- coding: utf-8 -*-
# Copyright: cpuinfer.llm contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Which class of CPU a host is (Xeon, Kunpeng 920, Phytium, other), its normalised ISA, and the
llama.cpp build flags for that class. Pure functions over what _topology read."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

# cpuinfo flag (x86) / Features word (ARM) -> normalised name
X86_ISA = {
    "sse4_2": "sse4_2", "avx": "avx", "avx2": "avx2", "fma": "fma", "f16c": "f16c", "bmi2": "bmi2",
    "avx512f": "avx512f", "avx512bw": "avx512bw", "avx512vl": "avx512vl", "avx512vbmi": "avx512_vbmi",
    "avx512_vnni": "avx512_vnni", "avx512_bf16": "avx512_bf16", "avx_vnni": "avx_vnni",
    "amx_tile": "amx_tile", "amx_int8": "amx_int8", "amx_bf16": "amx_bf16",
}
ARM_ISA = {
    "asimd": "neon", "asimddp": "dotprod", "asimdhp": "fp16", "fphp": "fp16",
    "i8mm": "i8mm", "sve": "sve", "sve2": "sve2", "bf16": "bf16",
}
X86_RDT_FLAGS = {
    "l3_cat": ("cat_l3",), "l3_cdp": ("cdp_l3",), "l2_cat": ("cat_l2",), "mba": ("mba",),
    "l3_mon": ("cqm_llc", "cqm_occup_llc"),
}
RESCTRL_INFO_FOR = {"l3_cat": "L3", "l3_cdp": "L3CODE", "l2_cat": "L2", "mba": "MB", "l3_mon": "L3_MON"}

ARM_IMPLEMENTERS = {0x41: "ARM", 0x48: "HiSilicon", 0x70: "Phytium"}
ARM_PARTS = {
    (0x48, 0xD01): "Kunpeng 920 (TaiShan v110)",
    (0x70, 0x662): "Phytium FTC662 (FT-2000+/64)",
    (0x70, 0x663): "Phytium FTC663 (S2500)",
    (0x41, 0xD08): "Cortex-A72",
    (0x41, 0xD0C): "Neoverse-N1",
    (0x41, 0xD40): "Neoverse-V1",
    (0x41, 0xD49): "Neoverse-N2",
}
KUNPENG_920_ARCH = "armv8.2-a+dotprod+fp16"
PHYTIUM_ARCH = "armv8-a"  # FT-2000+/S2500 cores have no dot-product instructions


def _first(per_cpu, key, common):
    for block in per_cpu:
        if key in block:
            return block[key]
    return common.get(key)


X86_VENDORS = ("GenuineIntel", "AuthenticAMD", "HygonGenuine", "CentaurHauls", "Shanghai")
BUILD_ARCHES = ("x86_64", "aarch64")  # the CPU architectures llama.cpp classes exist for


def detect_arch(common, per_cpu):
    """x86_64 or aarch64 from what /proc/cpuinfo shows, else 'other' (ppc64le, riscv64, s390x,
    an empty file): those hosts get no build class rather than another architecture's flags."""
    vendor = _first(per_cpu, "vendor_id", common)
    if vendor in X86_VENDORS and _first(per_cpu, "flags", common) is not None:
        return "x86_64"
    if _first(per_cpu, "CPU implementer", common) is not None and _first(per_cpu, "Features", common) is not None:
        return "aarch64"
    return "other"


def _hex_id(text):
    try:
        return int(text, 16)
    except (TypeError, ValueError):
        return None


def arm_ids(common, per_cpu, midr_value):
    """(implementer, part) from MIDR_EL1 when exposed, else from /proc/cpuinfo."""
    if midr_value is not None:
        return (midr_value >> 24) & 0xFF, (midr_value >> 4) & 0xFFF
    return _hex_id(_first(per_cpu, "CPU implementer", common)), _hex_id(_first(per_cpu, "CPU part", common))


def identify(arch, common, per_cpu, midr_value):
    """{platform, vendor, model_name, flags(set of raw words)}."""
    if arch not in BUILD_ARCHES:
        model = _first(per_cpu, "model name", common) or _first(per_cpu, "cpu", common) or "unknown"
        return {"platform": "other", "vendor": "unknown", "model_name": model, "flags": set()}
    if arch == "x86_64":
        vendor = _first(per_cpu, "vendor_id", common) or "unknown"
        model = _first(per_cpu, "model name", common) or "unknown"
        flags = set((_first(per_cpu, "flags", common) or "").split())
        platform = "xeon" if vendor == "GenuineIntel" and "Xeon" in model else "x86_64"
        return {"platform": platform, "vendor": vendor, "model_name": model, "flags": flags}
    implementer, part = arm_ids(common, per_cpu, midr_value)
    flags = set((_first(per_cpu, "Features", common) or "").split())
    if implementer == 0x48 and part == 0xD01:
        platform = "kunpeng"
    elif implementer == 0x70:
        platform = "phytium"
    else:
        platform = "aarch64"
    vendor = ARM_IMPLEMENTERS.get(implementer, "implementer 0x%02x" % implementer if implementer is not None else "unknown")
    model = ARM_PARTS.get((implementer, part))
    if model is None:
        model = "part 0x%03x" % part if part is not None else "unknown"
    return {"platform": platform, "vendor": vendor, "model_name": model, "flags": flags}


def normalised_isa(arch, flags):
    if arch not in BUILD_ARCHES:
        return []
    table = X86_ISA if arch == "x86_64" else ARM_ISA
    return sorted(set(table[word] for word in flags if word in table))


def rdt_support(arch, flags, info_resources, mounted, kernel_supports):
    result = {"mounted": mounted, "kernel": kernel_supports}
    for feature, resource in RESCTRL_INFO_FOR.items():
        by_flag = arch == "x86_64" and any(flag in flags for flag in X86_RDT_FLAGS[feature])
        result[feature] = by_flag or resource in info_resources
    return result


def _x86_args(isa):
    on = set(isa)
    if {"avx2", "fma", "f16c"} <= on:
        args = ["-DGGML_AVX=ON", "-DGGML_AVX2=ON", "-DGGML_FMA=ON", "-DGGML_F16C=ON"]
        args.append("-DGGML_BMI2=%s" % ("ON" if "bmi2" in on else "OFF"))
        if {"avx512f", "avx512bw", "avx512vl"} <= on:
            args.append("-DGGML_AVX512=ON")
            for name, flag in (("avx512_vnni", "AVX512_VNNI"), ("avx512_vbmi", "AVX512_VBMI"), ("avx512_bf16", "AVX512_BF16")):
                args.append("-DGGML_%s=%s" % (flag, "ON" if name in on else "OFF"))
            # AMX stays off: a CPU can list amx_tile and still fault on its first tile instruction
            # (seen on a virtual Sapphire Rapids: SIGILL at tilezero in libggml-cpu), and nothing a
            # facts module reads tells the two apart. The ISA list still reports it.
            args += ["-DGGML_AMX_TILE=OFF", "-DGGML_AMX_INT8=OFF"]
            level = "x86-avx512"
        else:
            args.append("-DGGML_AVX512=OFF")
            level = "x86-avx2"
    elif "avx" in on:
        args = ["-DGGML_AVX=ON", "-DGGML_AVX2=OFF", "-DGGML_FMA=OFF", "-DGGML_F16C=OFF", "-DGGML_AVX512=OFF"]
        level = "x86-avx"
    else:
        args = ["-DGGML_AVX=OFF", "-DGGML_AVX2=OFF", "-DGGML_FMA=OFF", "-DGGML_F16C=OFF", "-DGGML_AVX512=OFF"]
        level = "x86-sse"
    return level, args


def _arm_arch(platform, isa):
    if platform == "kunpeng":
        return KUNPENG_920_ARCH
    if platform == "phytium":
        return PHYTIUM_ARCH
    extensions = [name for name in ("dotprod", "fp16", "i8mm") if name in isa]
    return "armv8.2-a+" + "+".join(extensions) if extensions else "armv8-a"


def llama_build(arch, platform, isa):
    """(build_class, cmake_args): one portable llama.cpp build per class, never -march=native;
    (None, []) for an architecture without classes."""
    if arch not in BUILD_ARCHES:
        return None, []
    if arch == "x86_64":
        level, args = _x86_args(isa)
    else:
        march = _arm_arch(platform, isa)
        level, args = "arm-" + march, ["-DGGML_CPU_ARM_ARCH=" + march]
    return level, ["-DGGML_NATIVE=OFF"] + args
