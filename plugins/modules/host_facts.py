#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright: cpuinfer.llm contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import absolute_import, division, print_function

__metaclass__ = type

DOCUMENTATION = r"""
module: host_facts
short_description: Facts about a CPU inference host - platform class, ISA, topology, cgroup and RDT support
version_added: 1.0.0
description:
  - Tells Intel Xeon, Huawei Kunpeng 920 and Phytium (FT-2000+, S2500) hosts apart from other
    x86_64 and aarch64 machines, and reports what the tuning and the llama.cpp build need.
  - Reads only C(/proc/cpuinfo), C(/proc/filesystems), C(/proc/mounts), C(/sys/devices/system/cpu)
    (online, topology, caches, ARM C(midr_el1)), C(/sys/devices/system/node),
    C(/sys/fs/cgroup/cgroup.controllers) and C(/sys/fs/resctrl/info); changes nothing.
  - Reports the C library's release (from C(libc.so.6)'s banner) and libstdc++'s newest C(GLIBCXX_)
    version (from its file name) under C(runtime), so a controller-built engine can be checked
    against what the host will load; C(null) where the host has neither (musl, a bare tree).
  - Reports under C(os) the distribution and release (read by Ansible's C(sys_info) from
    C(/etc/os-release); on Debian and Ubuntu the names setup gives), the machine and the Python that runs
    modules, which key an engine build, so a converge needs no setup run. Always the live host's, whatever O(root).
  - Reports C(cpufreq_epp) (the energy/performance preference, null without one) and C(cpuidle_driver)
    (null where the host has none, as VMs under emulation).
  - Reports under C(isolation) the CPUs the running kernel keeps C(nohz_full) and C(isolated)
    (C(/sys/devices/system/cpu); C(nohz_full) null where the kernel lacks NO_HZ_FULL) and the isolation
    arguments it booted with (C(cmdline), from C(/proc/cmdline)), and under C(tuned)
    whether tuned is installed and running (its pid file, C(/run/tuned/tuned.pid)) and its active profile
    (C(/etc/tuned/active_profile)).
  - Facts are returned under C(ansible_facts.cpuinfer).
  - Hosts of other architectures (ppc64le, riscv64, s390x, or a C(/proc/cpuinfo) the module cannot
    read) are reported as C(platform=other), C(arch=other) with no ISA and no llama.cpp build class;
    roles that need a class refuse them by name.
  - A sysfs that contradicts itself (online CPUs without their directory, a package id on some CPUs
    only, a number that is not one) fails the module with the file named, rather than guessing.
  - With O(records), also reports the files an earlier converge left (the collection's records) as
    they are, under C(ansible_facts.cpuinfer_records), so a play skips rewriting a record that is
    already current without a stat run of its own.
  - With O(units), also reports the loaded systemd units matching its patterns under
    C(ansible_facts.cpuinfer_units) (one C(systemctl show)), so a play skips starting what already runs.
author: cpuinfer.llm maintainers (@cpuinfer)
options:
  records:
    description:
      - Absolute paths of record files to report. A directory stands for the regular files directly in it.
      - Each file is reported by its path with C(sha256) (of its bytes), C(mode) (octal text), C(uid)
        and C(gid); a named file that does not exist as C(null). A missing directory adds nothing.
    type: list
    elements: path
    default: []
  units:
    description:
      - Patterns (shell globs) of systemd units to report, such as V(cpuinfer-*). A pattern reports the
        loaded units it matches (a unit that runs is loaded); a unit named in full is reported even when it
        is not loaded, as systemd shows it (C(inactive)), so a play knows it does not run. Nothing is
        reported below a O(root) other than V(/), or where systemctl fails.
    type: list
    elements: str
    default: []
extends_documentation_fragment:
  - cpuinfer.llm.kernel
attributes:
  facts:
    support: full
    description: Returns its facts under C(ansible_facts.cpuinfer).
  check_mode:
    support: full
    description: The module only reads.
  diff_mode:
    support: none
"""

EXAMPLES = r"""
- name: Learn what kind of inference host this is
  cpuinfer.llm.host_facts:

- name: Build flags for this host's class
  ansible.builtin.debug:
    msg: "{{ ansible_facts.cpuinfer.llama_cmake_args | join(' ') }}"

- name: Learn the host and what an earlier converge recorded in the collection's state directory
  cpuinfer.llm.host_facts:
    records:
      - /var/lib/cpuinfer

- name: Learn the host, and which of the collection's units run and are enabled
  cpuinfer.llm.host_facts:
    units:
      - cpuinfer-*

- name: Read facts from an offline snapshot of another host
  cpuinfer.llm.host_facts:
    root: /srv/snapshots/kunpeng-01
"""

RETURN = r"""
ansible_facts:
  description: Facts under the key C(cpuinfer).
  returned: always
  type: dict
  contains:
    cpuinfer:
      description: The host's facts.
      type: dict
      returned: always
      sample:
        platform: kunpeng
        arch: aarch64
        vendor: HiSilicon
        model_name: Kunpeng 920 (TaiShan v110)
        sockets: 2
        physical_cores: 128
        logical_cpus: 128
        online_cpus: "0-127"
        numa_nodes: [{id: 0, cpus: "0-31"}, {id: 1, cpus: "32-63"}]
        l3_domains: ["0-31", "32-63"]
        core_cpus: ["0", "1"]
        caches: [{level: 3, type: Unified, size_bytes: 33554432, cpus: "0-31"}]
        isa: [dotprod, fp16, neon]
        cgroup: {version: 2, controllers: [cpu, cpuset, io, memory, pids], cpu_idle: true}
        rdt: {l3_cat: false, l3_cdp: false, l2_cat: false, mba: false, l3_mon: false, mounted: false, kernel: false}
        llama_build_class: arm-armv8.2-a+dotprod+fp16
        llama_cmake_args: ["-DGGML_NATIVE=OFF", "-DGGML_CPU_ARM_ARCH=armv8.2-a+dotprod+fp16"]
        runtime: {glibc: "2.36", glibcxx: "3.4.30", systemd: 252}
        os: {distribution: Debian, release: bookworm, architecture: aarch64, python: "3.11"}
        cpufreq_governor: performance
        cpufreq_epp: balance_performance
        cpuidle_driver: intel_idle
        isolation: {nohz_full: "2-127", isolated: "", cmdline: {nohz_full: "2-127", rcu_nocbs: "2-127", irqaffinity: "0-1"}}
        tuned: {installed: true, running: true, active_profile: throughput-performance}
    cpuinfer_records:
      description: The files of O(records) as they are, by path (C(null) for a named file that is absent).
      type: dict
      returned: always
      sample:
        /var/lib/cpuinfer/host_facts.json: {sha256: 9f86d081884c7d65, mode: "0640", uid: 0, gid: 0}
        /var/lib/cpuinfer/host_tuning_original.json: null
    cpuinfer_units:
      description: The loaded units matching O(units), by name, with C(active) (systemd's ActiveState) and C(file) (UnitFileState).
      type: dict
      returned: always
      sample:
        cpuinfer-besteffort.slice: {active: active, file: enabled}
        cpuinfer-besteffort-idle.service: {active: active, file: static}
"""

from ansible_collections.cpuinfer.llm.plugins.module_utils import (
    _bootloader, _cgroupfs, _cpu_classes, _resctrl, _runtime, _systemd_units, _topology, _tuned)
from ansible_collections.cpuinfer.llm.plugins.module_utils._os_identity import os_identity
from ansible_collections.cpuinfer.llm.plugins.module_utils._records import problems, records
from ansible_collections.cpuinfer.llm.plugins.module_utils._cpulist import format_cpulist
from ansible_collections.cpuinfer.llm.plugins.module_utils._runner import refuse_if, run_module

ARGUMENT_SPEC = dict(root=dict(type="path", default="/"), records=dict(type="list", elements="path", default=[]),
                     units=dict(type="list", elements="str", default=[]))


def _isolation_cmdline(root):
    """The isolation arguments the running kernel booted with ({} where /proc/cmdline cannot be read)."""
    try:
        running = _bootloader.running_args(root)
    except _bootloader.BootLoaderError:
        return {}
    return dict((key, running[key]) for key in _bootloader.ISOLATION_ARGS if key in running)


def gather(root):
    common, per_cpu = _topology.read_cpuinfo(root)
    arch = _cpu_classes.detect_arch(common, per_cpu)
    cpus = _topology.online_cpus(root)
    _topology.check_consistent(root, cpus)
    identity = _cpu_classes.identify(arch, common, per_cpu, _topology.midr(root, cpus) if arch == "aarch64" else None)
    isa = _cpu_classes.normalised_isa(arch, identity["flags"])
    sockets, physical_cores = _topology.packages_and_cores(root, cpus)
    caches = _topology.caches(root, cpus)
    nodes = _topology.numa_nodes(root) or [{"id": 0, "cpus": format_cpulist(cpus)}]
    mounted = [mountpoint for mountpoint, fstype in _cgroupfs.mounts(root) if fstype == "resctrl"]
    build_class, cmake_args = _cpu_classes.llama_build(arch, identity["platform"], isa)
    return {
        "platform": identity["platform"],
        "arch": arch,
        "vendor": identity["vendor"],
        "model_name": identity["model_name"],
        "sockets": sockets,
        "physical_cores": physical_cores,
        "logical_cpus": len(cpus),
        "online_cpus": format_cpulist(cpus),
        "numa_nodes": nodes,
        "l3_domains": [c["cpus"] for c in caches if c["level"] == 3 and c["type"] == "Unified"],
        "core_cpus": _topology.thread_siblings(root, cpus),
        "caches": caches,
        "isa": isa,
        "cgroup": {
            "version": _cgroupfs.hierarchy_version(root),
            "controllers": _cgroupfs.available_controllers(root),
            "cpu_idle": _cgroupfs.kernel_has_cpu_idle(root),
        },
        "rdt": _cpu_classes.rdt_support(
            arch, identity["flags"], _resctrl.info_resources(root), bool(mounted), _resctrl.kernel_supports(root)
        ),
        "llama_build_class": build_class,
        "llama_cmake_args": cmake_args,
        "runtime": _runtime.runtime(root),
        "cpufreq_governor": _topology.cpufreq_governor(root, cpus),
        "cpufreq_epp": _topology.cpufreq_epp(root, cpus),
        "cpuidle_driver": _topology.cpuidle_driver(root),
        "isolation": dict(_topology.isolated_cpus(root), cmdline=_isolation_cmdline(root)),
        "tuned": _tuned.tuned_state(root),
    }


def report(module, dummy_journal):
    refuse_if(problems("records", module.params["records"]))
    facts = gather(module.params["root"])
    facts["os"] = os_identity()  # the live host's, whatever the root (no setup run needed for builds)
    units = _systemd_units.unit_states(module.run_command, module.params["root"], module.params["units"])
    return dict(changed=False, ansible_facts={"cpuinfer": facts,
                                              "cpuinfer_records": records(module.params["root"], module.params["records"]),
                                              "cpuinfer_units": units})


def main():
    run_module(ARGUMENT_SPEC, report)


if __name__ == "__main__":
    main()
