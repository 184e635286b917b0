"""A lab host is what the collection targets: systemd as PID 1 on a pure cgroup v2 hierarchy."""

import json
import os

REQUIRED_CONTROLLERS = {"cpu", "memory", "io", "cpuset"}


def test_systemd_is_pid_1(host):
    assert host.file("/proc/1/comm").content_string.strip() == "systemd"


def test_cgroup2_is_the_only_hierarchy(host):
    mounts = host.file("/proc/mounts").content_string.splitlines()
    fs_cgroup = [line.split() for line in mounts if line.split()[1] == "/sys/fs/cgroup"]
    assert [m[2] for m in fs_cgroup] == ["cgroup2"]
    assert not any(line.split()[2] == "cgroup" for line in mounts)


def test_inference_controllers_available(host):
    available = set(host.file("/sys/fs/cgroup/cgroup.controllers").content_string.split())
    assert REQUIRED_CONTROLLERS <= available


def test_converge_left_its_state_directory(host):
    state = host.file("/var/lib/cpuinfer")
    assert state.is_directory
    assert state.user == "root"
    assert state.mode == 0o755  # the inference service user reads models below it


def test_guest_architecture_matches_the_scenario(host):
    expected = "aarch64" if os.environ.get("MOLECULE_SCENARIO_NAME") == "arm64" else "x86_64"
    assert host.system_info.arch == expected


def _recorded_facts(host):
    with host.sudo():
        return json.loads(host.file("/var/lib/cpuinfer/host_facts.json").content_string)


def test_host_facts_match_the_guest(host):
    facts = _recorded_facts(host)
    with host.sudo():
        nproc = int(host.check_output("nproc --all"))
    assert facts["logical_cpus"] == nproc
    assert facts["physical_cores"] >= 1 and facts["sockets"] == 1
    assert facts["cgroup"]["version"] == 2
    assert REQUIRED_CONTROLLERS <= set(facts["cgroup"]["controllers"])
    assert facts["numa_nodes"][0]["id"] == 0
    assert not facts["rdt"]["l3_cat"] and not facts["rdt"]["mounted"]  # emulated CPUs have no RDT
    if os.environ.get("MOLECULE_SCENARIO_NAME") == "arm64":
        assert facts["arch"] == "aarch64"
        assert facts["platform"] == "aarch64"  # a Neoverse-N1 guest is neither Kunpeng nor Phytium
        assert facts["model_name"] == "Neoverse-N1"
        assert {"neon", "dotprod", "fp16"} <= set(facts["isa"])
        # ... and shares the Kunpeng 920 class: one cross-compiled engine serves both
        assert facts["llama_build_class"] == "arm-armv8.2-a+dotprod+fp16"
    else:
        assert facts["arch"] == "x86_64" and facts["platform"] in ("x86_64", "xeon")
        assert {"avx", "avx2", "fma", "f16c"} <= set(facts["isa"])  # qemu -cpu max under TCG
        assert facts["llama_build_class"] == "x86-avx2"


AGENT_UNITS = ("cpuinfer-irq-affinity.service", "cpuinfer-metrics.service", "cpuinfer-slo-controller.service")


def agent_daemons(host):
    """{unit: argv} of every agent daemon systemd runs on the host now."""
    with host.sudo():
        listed = host.check_output("systemctl list-units --state=running --no-legend --plain %s" % " ".join(
            "'%s'" % unit for unit in AGENT_UNITS))
        daemons = {}
        for unit in (line.split()[0] for line in listed.splitlines() if line.strip()):
            pid = host.check_output("systemctl show --property MainPID --value %s" % unit)
            daemons[unit] = host.file("/proc/%s/cmdline" % pid).content_string.rstrip("\0").split("\0")
    return daemons


def test_agent_daemons_run_from_the_agent_venv(host):
    """Each agent daemon is the venv's python running the venv's entry point of one installed build."""
    with host.sudo():
        installed = host.check_output("find /opt/cpuinfer/agent -mindepth 2 -maxdepth 2 -name .cpuinfer-installed")
    builds = {os.path.dirname(path) for path in installed.split()}
    daemons = agent_daemons(host)
    if os.environ.get("MOLECULE_SCENARIO_NAME") == "default":  # 2 vCPUs: a real split, so the IRQ keeper runs
        assert "cpuinfer-irq-affinity.service" in daemons
    for unit, argv in daemons.items():
        build = os.path.dirname(os.path.dirname(argv[0]))
        assert build in builds, (unit, argv, builds)
        # the kernel runs the entry point's shebang: the venv's interpreter (bin/python3, a link pip names)
        assert argv[0] in (build + "/bin/python", build + "/bin/python3"), (unit, argv)
        assert argv[1].startswith(build + "/bin/cpuinfer-"), (unit, argv)
