# Copyright: cpuinfer.llm contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The llama.cpp trees engines are built from, each vendored by a pinned PyPI sdist.

  llama.cpp     mainline, from llama-cpp-python: llama-server, llama-bench, the libraries the Python
                server (engines llama-server and llama-cpp-python) loads, and that package's wheel
  ik_llama.cpp  the CPU-focused fork (MLA and fused-MoE kernels, run-time repacking), from
                ik-llama-cpp-python: its llama-server and llama-bench (engine ik_llama.cpp)

Host classes are described in mainline's CMake options (host_facts); class_args says them in the
tree's own terms, or refuses an option the tree lacks.
"""

import hashlib
import os

import ik_tree_fixes

_HERE = os.path.dirname(os.path.abspath(__file__))


def _ours(relative):
    with open(os.path.join(_HERE, relative), encoding="utf-8") as handle:
        return handle.read()


# llama.cpp's tree as the engine needs it: shared libraries, no tests, nothing fetched at build time
# (the prebuilt web UI comes from a download), no TLS in the server (a proxy in front terminates it),
# libraries found beside the binary ($ORIGIN).
_COMMON = ["-DCMAKE_BUILD_TYPE=Release", "-DBUILD_SHARED_LIBS=ON", "-DCMAKE_BUILD_RPATH_USE_ORIGIN=ON",
           "-DLLAMA_BUILD_TESTS=OFF", "-DLLAMA_BUILD_SERVER=ON", "-DLLAMA_CURL=OFF"]

SOURCES = {
    "llama.cpp": {
        "package": "llama-cpp-python", "sdist": "llama_cpp_python", "vendor": "llama.cpp", "key_prefix": "",
        "cmake_args": _COMMON + ["-DLLAMA_BUILD_TOOLS=ON", "-DLLAMA_BUILD_EXAMPLES=OFF", "-DLLAMA_BUILD_APP=OFF",
                                 "-DLLAMA_BUILD_UI=OFF", "-DLLAMA_USE_PREBUILT_UI=OFF", "-DLLAMA_OPENSSL=OFF"],
        "wheel": True,
        "targets": ("llama-server", "llama-bench"),
    },
    "ik_llama.cpp": {
        "package": "ik-llama-cpp-python", "sdist": "ik_llama_cpp_python", "vendor": "ik_llama.cpp", "key_prefix": "ik-",
        # its server and tools are examples: configured, and only its targets (below) built
        "cmake_args": _COMMON + ["-DLLAMA_BUILD_EXAMPLES=ON", "-DGGML_CCACHE=OFF"],
        "wheel": False,
        # besides the server and the bench: the perplexity tool (likelihoods of a text with several
        # sequences in one batch, flash attention on and off) and our flash-attention check
        "targets": ("llama-server", "llama-bench", "llama-perplexity", "cpuinfer-fa-check"),
        "fixes": ik_tree_fixes,
        # the sdist lacks the script its build runs to write common/build-info.cpp; this one fills the
        # template from cmake/build-info.cmake (no Git in an unpacked sdist: commit "unknown")
        "missing_files": {
            "common/cmake/build-info-gen-cpp.cmake":
                'include("${CMAKE_CURRENT_SOURCE_DIR}/cmake/build-info.cmake")\n'
                'configure_file("${CMAKE_CURRENT_SOURCE_DIR}/common/build-info.cpp.in"'
                ' "${CMAKE_CURRENT_SOURCE_DIR}/common/build-info.cpp")\n',
            "examples/cpuinfer-fa-check/CMakeLists.txt":
                "set(TARGET cpuinfer-fa-check)\n"
                "add_executable(${TARGET} fa-check.cpp)\n"
                "target_link_libraries(${TARGET} PRIVATE ggml ${CMAKE_THREAD_LIBS_INIT})\n"
                "target_compile_features(${TARGET} PRIVATE cxx_std_17)\n",
            "examples/cpuinfer-fa-check/fa-check.cpp": _ours("fa_check/fa-check.cpp"),
        },
    },
}


def targets(source):
    """What a build of source holds in engine/ besides the shared libraries: the server the units run,
    the bench tool calibration runs, and the source's own checks."""
    return SOURCES[source]["targets"]


def complete(source, tree):
    """Writes the files the source's sdist lacks into its unpacked tree (the sdist's top directory) and
    applies our fixes of it."""
    vendor = os.path.join(tree, "vendor", SOURCES[source]["vendor"])
    for relative, text in SOURCES[source].get("missing_files", {}).items():
        path = os.path.join(vendor, relative)
        if not os.path.exists(path):
            os.makedirs(os.path.dirname(path), exist_ok=True)
            with open(path, "w", encoding="utf-8") as handle:
                handle.write(text)
    if "fixes" in SOURCES[source]:
        SOURCES[source]["fixes"].apply(vendor)


def changes_digest(source):
    """What we add to and change in the source's tree, for its build key ("" where nothing)."""
    spec = SOURCES[source]
    if "fixes" not in spec:
        return ""
    material = [spec["fixes"].fixes_digest(), repr(sorted(spec.get("missing_files", {}).items())), repr(spec["targets"])]
    return hashlib.sha256("\n".join(material).encode()).hexdigest()[:12]


class UnsupportedOption(ValueError):
    """A class option the tree cannot build."""


def _flags(args, flags):
    """args with flags appended to CMAKE_C_FLAGS and CMAKE_CXX_FLAGS (given ones kept)."""
    result = list(args)
    for variable in ("CMAKE_C_FLAGS", "CMAKE_CXX_FLAGS"):
        prefix = "-D%s=" % variable
        given = [a for a in result if a.startswith(prefix)]
        words = [a[len(prefix):] for a in given] + flags
        result = [a for a in result if not a.startswith(prefix)] + [prefix + " ".join(words)]
    return result


def class_args(source, args):
    """The class's CMake arguments (mainline's terms) as the tree of source takes them."""
    if source == "llama.cpp":
        return list(args)
    if "-DGGML_CPU_KLEIDIAI=ON" in args:
        raise UnsupportedOption("ik_llama.cpp has no KleidiAI kernels: leave its classes out of llama_server_kleidiai_classes")
    result, flags = [], []
    for arg in args:
        if arg.startswith("-DGGML_CPU_ARM_ARCH="):
            # ik_llama.cpp has no such option; without -march its aarch64 build has no dot product
            # and none of its own (IQK) kernels
            flags.append("-march=" + arg.split("=", 1)[1])
        else:
            result.append(arg)
    if "-DGGML_AVX512=ON" in args:
        # its AVX-512 kernels need DQ and VL, which its GGML_AVX512 does not turn on (every CPU of
        # the class has them: the class asks for F, BW and VL)
        flags += ["-mavx512dq", "-mavx512vl"]
    return _flags(result, flags) if flags else result
