# Copyright: cpuinfer.llm contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Does an engine build load on the hosts it is for? Every ELF file of it must be of the hosts'
machine and need no GLIBC_/GLIBCXX_ symbol version newer than the hosts' glibc and libstdc++.
A build made on a newer system than its hosts fails here, on the controller, instead of at the
hosts' first start (`version GLIBCXX_3.4.32 not found`). The engine's own libraries it needs must lie
beside it (found by $ORIGIN): a tree that leaves them elsewhere fails here, not with `libllama.so => not
found` on every host."""

import os

from elftools.common.exceptions import ELFError
from elftools.elf.elffile import ELFFile
from elftools.elf.gnuversions import GNUVerNeedSection

# ELF e_machine as pyelftools names it, per `uname -m`
ELF_MACHINES = {"x86_64": "EM_X86_64", "aarch64": "EM_AARCH64"}
RUNTIMES = ("GLIBC", "GLIBCXX")
# Libraries the engine's tree makes (no host has them): each one needed must be shipped beside its user.
OWN_LIBRARIES = ("libllama", "libggml", "libmtmd")


def version_tuple(text):
    return tuple(int(part) for part in text.split("."))


def needed_libraries(path):
    """The DT_NEEDED names of an ELF file."""
    with open(path, "rb") as handle:
        dynamic = ELFFile(handle).get_section_by_name(".dynamic")
        return [tag.needed for tag in dynamic.iter_tags("DT_NEEDED")] if dynamic else []


def elf_requirements(path):
    """(e_machine, {"GLIBC": "2.34", "GLIBCXX": "3.4.29"}: the newest version of each it needs)."""
    with open(path, "rb") as handle:
        elf = ELFFile(handle)
        newest = {}
        for section in elf.iter_sections():
            if not isinstance(section, GNUVerNeedSection):
                continue
            for _needed, auxiliaries in section.iter_versions():
                for auxiliary in auxiliaries:
                    runtime, sep, version = auxiliary.name.partition("_")
                    if runtime not in RUNTIMES or not sep or not version[:1].isdigit():
                        continue  # GLIBC_PRIVATE, GCC_3.0, CXXABI_1.3: not what a release number bounds
                    if runtime not in newest or version_tuple(version) > version_tuple(newest[runtime]):
                        newest[runtime] = version
        return elf["e_machine"], newest


def elf_files(directory):
    for parent, _dirs, files in os.walk(directory):
        for name in sorted(files):
            path = os.path.join(parent, name)
            if os.path.islink(path):
                continue
            with open(path, "rb") as handle:
                if handle.read(4) == b"\x7fELF":
                    yield path


def problems(directory, machine, host_versions):
    """What keeps the build in directory from loading on hosts of machine with host_versions
    ({"GLIBC": "2.36", "GLIBCXX": "3.4.30"}; a None version is not checked); [] when it loads."""
    found = []
    expected = ELF_MACHINES.get(machine)
    for path in elf_files(directory):
        name = os.path.relpath(path, directory)
        try:
            elf_machine, newest = elf_requirements(path)
        except ELFError as exc:
            found.append("%s is not a readable ELF file (%s)" % (name, exc))
            continue
        if elf_machine != expected:
            found.append("%s is built for %s, the hosts are %s (%s)" % (name, elf_machine, machine, expected))
        missing = [library for library in needed_libraries(path) if library.startswith(OWN_LIBRARIES)
                   and not os.path.exists(os.path.join(os.path.dirname(path), library))]
        if missing:
            found.append("%s needs %s, not shipped beside it" % (name, ", ".join(missing)))
        for runtime, needed in sorted(newest.items()):
            available = host_versions.get(runtime)
            if available and version_tuple(needed) > version_tuple(available):
                found.append("%s needs %s_%s, the hosts have %s_%s" % (name, runtime, needed, runtime, available))
    return found
