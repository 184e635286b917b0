"""Properties of every module over its whole argument spec, on fake kernel trees.

For any input a module either succeeds or fails through fail_json with a message and no traceback
(a traceback means a defect, not an answer); after a failure and after check mode the tree is
exactly as before; a success run again reports no change. Inputs come from each module's own
ARGUMENT_SPEC, mixed with the values operators get wrong: digits of other scripts, numbers where
text belongs, empty names, YAML's integers for hex masks, negative and absurd sizes.
"""

import errno
import hashlib
import tempfile
from pathlib import Path

from hypothesis import HealthCheck, event, given, settings
from hypothesis import strategies as st

from ansible_collections.cpuinfer.llm.plugins.modules import (
    cgroup_v2,
    host_facts,
    irq_affinity,
    managed_files,
    perf_paranoid,
    rdt_cat,
    release,
    sched_policy,
    sysctl,
    thp,
)

from fake_cgroup import DELEGATED
from fake_hosts import cgroup_host, files_host, irq_host, perf_host, rdt_host, sched_host, sysctl_host, thp_host
from kernel_tree import FakeThpKernel, write_tree, xeon_tree

SETTINGS = settings(max_examples=100, deadline=None, derandomize=True,
                    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow])

NASTY_TEXT = st.sampled_from([
    "", " ", "１０", "²", "٣", "-1", "0", "1", "512", "0xff", "ff0", "max", "MAX", "10G", "64M", "-5M", "1e3",
    "☃", "1-", "3-1", "0-1", "0,2", "a,b", "99999999999999999999", "\x00", "8:0", "10ms", "5 weeks", "none",
])
NASTY_INT = st.one_of(st.integers(-3, 70000), st.sampled_from([-(2 ** 40), 2 ** 33, 2 ** 63, 0, 1, 511, 512]))
ANY_SCALAR = st.one_of(NASTY_TEXT, NASTY_INT, st.booleans(), st.none(), st.floats(allow_nan=False, width=16))


def _from_spec(name, spec, hints, bad=None):
    kind = spec.get("type", "str")
    options = []
    if name in hints:
        options.append(hints[name])
    if bad and name in bad:
        options.append(bad[name])
    if "choices" in spec:
        options.append(st.sampled_from(spec["choices"]))
    if kind == "dict" and "options" in spec:
        options.append(st.fixed_dictionaries({}, optional=dict(
            (sub, _from_spec(sub, subspec, hints)) for sub, subspec in spec["options"].items())))
    elif kind == "dict":
        values = st.one_of(ANY_SCALAR, st.lists(ANY_SCALAR, max_size=3), st.dictionaries(NASTY_TEXT, ANY_SCALAR, max_size=3))
        options.append(st.dictionaries(NASTY_TEXT, values, max_size=3))
    elif kind == "list":
        options.append(st.lists(NASTY_INT if spec.get("elements") == "int" else NASTY_TEXT, max_size=4))
    options.append(ANY_SCALAR)
    return st.one_of(options)


def arguments(module, good, bad):
    """Half the examples from values an operator means (good hints, choices), half from anything:
    the bad hints, other types, other scripts' digits."""
    spec = dict((name, value) for name, value in module.ARGUMENT_SPEC.items() if name != "root")
    plausible = dict((name, good[name] if name in good else st.sampled_from(value["choices"]))
                     for name, value in spec.items() if name in good or "choices" in value)
    anything = dict((name, _from_spec(name, value, good, bad)) for name, value in spec.items())
    return st.one_of(st.fixed_dictionaries({}, optional=plausible), st.fixed_dictionaries({}, optional=anything))


def tree_hash(root):
    """Every path and file content as the kernel would show it: a knob written "0-7" reads back "0-7\n"."""
    digest = hashlib.sha256()
    for path in sorted(Path(root).rglob("*")):
        digest.update(str(path.relative_to(root)).encode() + b"\0")
        if path.is_file():
            digest.update(path.read_bytes().strip() + b"\0")
    return digest.hexdigest()


def check_properties(run_module, module, root, args, check):
    before = tree_hash(root)
    failed, result = run_module(module, dict(args, root=str(root)), check=check)
    event("%s %s" % ("failed" if failed else "ok", "check" if check else "real"))
    assert "exception" not in result, result.get("exception")  # a defect, not an answer
    if failed:
        assert result["msg"].strip(), result
    if failed or check:
        assert tree_hash(root) == before, (args, result)
        return
    again_failed, again = run_module(module, dict(args, root=str(root)))
    assert not again_failed and not again["changed"], (args, again)


MODULE_CASES = []


def case(module, build, good, bad=None):
    MODULE_CASES.append((module, build, good, bad or {}))


THP_GOOD = st.fixed_dictionaries({}, optional={
    "defrag": st.integers(0, 1), "pages_to_scan": st.integers(1, 8192), "max_ptes_none": st.integers(0, 511),
    "scan_sleep_millisecs": st.integers(0, 60000)})
THP_BAD = st.fixed_dictionaries({}, optional={
    "defrag": st.integers(-1, 2), "pages_to_scan": NASTY_INT, "max_ptes_none": NASTY_INT, "alloc_sleep_millisecs": NASTY_INT})
case(thp, thp_host, good={"enabled": st.sampled_from(["madvise", "never"]), "khugepaged": THP_GOOD},
     bad={"khugepaged": THP_BAD})
case(perf_paranoid, perf_host, good={"level": st.integers(0, 4)}, bad={"level": st.integers(-3, 6)})
case(cgroup_v2, cgroup_host, good={
    "path": st.sampled_from([DELEGATED + "/model-a", DELEGATED + "/a/b"]),
    "cpu_weight": st.integers(1, 10000), "cpu_max": st.sampled_from(["max", "20000 100000", "max 50000"]),
    "memory_max": st.sampled_from(["1G", "max", "16M"]), "memory_low": st.sampled_from(["0", "8M"]),
    "io_weight": st.sampled_from([{"default": 200}, {"8:0": 300}]),
    "io_max": st.sampled_from([{"8:0": {"rbps": "10M", "wiops": 100}}, {"8:0": {"riops": "max"}}]),
    "cpuset_cpus": st.sampled_from(["1-2", "2,1", "0-3"]), "pids_max": st.sampled_from(["128", "max"]),
    "procs": st.just([4242]),
}, bad={
    "path": st.sampled_from([DELEGATED, "system.slice", "/abs", "a/../b", ""]),
    "cpu_max": st.sampled_from(["１０００ 100000", "500 100000", "1 2 3"]),
    "memory_max": st.sampled_from(["512", "-1G", "１G", "0"]), "memory_high": st.sampled_from(["0", "2G"]),
    "io_weight": st.sampled_from([{"default": True}, {"9:9": 1}, {"default": "１００"}, {"default": "100"}]),
    "io_max": st.sampled_from([{"8:0": 5}, {"8:0": {"riops": -5}}, {"8:0": {"wbps": 0}}, {"8:0": {"riops": "１０"}}]),
    "cpuset_cpus": st.sampled_from(["0-7", "", "１"]), "pids_max": st.sampled_from(["１０", "-1"]),
    "procs": st.sampled_from([[1], [2], [999999], [0], [-4]]),
})
case(rdt_cat, rdt_host, good={
    "name": st.sampled_from(["inference", "batch", ""]),
    "schemata": st.sampled_from([{"L3": "ff0"}, {"L3": "0xff"}, {"MB": 50}, {"L3": {"0": "f", "1": "f0"}}]),
    "cpus": st.sampled_from(["2-3", "0"]), "monitor": st.just({"decode": [4242]}), "pids": st.just([4242]),
}, bad={
    "name": st.sampled_from(["info", "a/b", ".."]),
    "schemata": st.sampled_from([{"L3": 255}, {"MB": "５０"}, {"L3": ["f"]}, {"MB": True}, {"L3": "f0f"}]),
    "cpus": st.sampled_from(["0-63", "x"]), "monitor": st.sampled_from([["decode"], {"decode": "4242"}, {"": [1]}]),
    "unit": st.sampled_from(["", "gone.service"]), "pids": st.sampled_from([[0], [-1]]),
})
case(sysctl, sysctl_host, good={"values": st.fixed_dictionaries({}, optional={
    "kernel.numa_balancing": st.integers(0, 1), "kernel.sched_rt_runtime_us": st.integers(-1, 1000000),
    "kernel.no_such_knob": st.just(1)})},
    bad={"values": st.dictionaries(st.sampled_from(["kernel.numa_balancing", "kernel/x", "x", "kernel.perf_event_paranoid"]),
                                   ANY_SCALAR, max_size=3)})
FILE_ENTRY = st.builds(
    lambda path, text_option, text, extra: dict(extra, path=path, **{text_option: text}),
    st.sampled_from(["/etc/a.conf", "/etc/demo.d/b.env", "/opt/x/y/z.service", "/etc/systemd/system/new.service"]),
    st.sampled_from(["content", "secret_content"]), NASTY_TEXT,
    st.fixed_dictionaries({}, optional={"mode": st.sampled_from(["0644", "0600", "0755", "644", "0o644", "rw"])}))
case(managed_files, files_host, good={"files": st.lists(FILE_ENTRY, max_size=3), "directories": st.lists(
    st.fixed_dictionaries({"path": st.sampled_from(["/etc/demo.d", "/var/lib/demo", "/etc/systemd/system/existing.service"])},
                          optional={"mode": st.sampled_from(["0700", "0755", "999"])}), max_size=2)})
case(release, files_host, good={
    "name": st.sampled_from(["demo", "llama_server"]), "state": st.sampled_from(["recorded", "rolled_back"]),
    "patterns": st.sampled_from([["/etc/systemd/system/*.service"], ["/etc/demo.d/*", "/etc/*.conf"], ["/nowhere/*"]]),
    "files": st.lists(FILE_ENTRY, max_size=2),
}, bad={
    "name": st.sampled_from(["../x", "", "a b"]), "patterns": st.sampled_from([["relative"], [], ["/a/../b"]]),
    "store": st.sampled_from(["relative", "/etc/systemd"]),
})
case(irq_affinity, irq_host, good={"cpus": st.sampled_from(["0", "0-1"])},
     bad={"cpus": st.sampled_from(["0-9", "", "１", "3-1"])})
case(sched_policy, sched_host, good={
    "pid": st.just(100), "policy": st.sampled_from(["idle", "other", "batch"]), "nice": st.integers(-20, 19),
}, bad={
    "priority": st.integers(-1, 100), "runtime": st.sampled_from(["2ms", "１ms", "500ns"]),
    "deadline": st.sampled_from(["10ms", "1ms"]), "pid": st.sampled_from([1, 2, 0, -1]),
    "unit": st.sampled_from(["", "llama.service"]), "process_name": st.sampled_from(["", "llama-server"]),
})


def _property_test(module, build, good, bad):
    @SETTINGS
    @given(args=arguments(module, good, bad), check=st.booleans())
    def test(run_module, monkeypatch, args, check):
        with tempfile.TemporaryDirectory() as directory:
            build(Path(directory), monkeypatch)
            check_properties(run_module, module, Path(directory), args, check)

    test.__name__ = "test_%s_refuses_cleanly_writes_nothing_on_failure_and_converges" % module.__name__.rsplit(".", 1)[1]
    return test


for _case in MODULE_CASES:
    globals()["test_" + _case[0].__name__.rsplit(".", 1)[1]] = _property_test(*_case)


CPUINFO_LINES = st.sampled_from([
    "processor\t: 0", "vendor_id\t: GenuineIntel", "vendor_id\t: IBM/S390", "flags\t\t: avx2 fma",
    "features\t: esan3 zarch", "CPU implementer\t: 0x48", "CPU implementer\t: zz", "CPU part\t: 0xd01",
    "Features\t: asimd asimddp", "cpu\t\t: POWER9 (raw), altivec supported", "isa\t\t: rv64imafdc",
    "model name\t: Intel(R) Xeon(R)", "", "garbage without colon", "processor\t: １",
])


@SETTINGS
@given(cpuinfo=st.lists(CPUINFO_LINES, max_size=8), online=st.sampled_from(["0-3", "0-7", "", "x", "0-1,3"]),
       package=st.sampled_from(["0", "-1", "", "zz", None]), level=st.sampled_from(["3", "three", "３"]))
def test_host_facts_never_guesses_and_never_crashes(run_module, cpuinfo, online, package, level):
    with tempfile.TemporaryDirectory() as directory:
        xeon_tree(directory)
        cpu = Path(directory) / "sys/devices/system/cpu"
        write_tree(directory, {"/proc/cpuinfo": "\n".join(cpuinfo) + "\n", "/sys/devices/system/cpu/online": online,
                               "/sys/devices/system/cpu/cpu0/cache/index3/level": level})
        if package is None:
            (cpu / "cpu1/topology/physical_package_id").unlink()
        else:
            write_tree(directory, {"/sys/devices/system/cpu/cpu1/topology/physical_package_id": package})
        failed, result = run_module(host_facts, {"root": directory})
        assert "exception" not in result, result.get("exception")
        if not failed:
            facts = result["ansible_facts"]["cpuinfer"]
            assert (facts["arch"] == "other") == (facts["llama_build_class"] is None)
            assert facts["platform"] != "aarch64" or facts["arch"] == "aarch64"


def test_fake_kernels_refuse_like_the_real_ones(tmp_path, monkeypatch):
    """The properties mean something only if the fakes can say no."""
    from ansible_collections.cpuinfer.llm.plugins.module_utils import _knobs

    FakeThpKernel(tmp_path).install(monkeypatch)
    try:
        _knobs.write_knob(str(tmp_path), "/sys/kernel/mm/transparent_hugepage/khugepaged/pages_to_scan", "0")
    except _knobs.KnobError as exc:
        assert exc.errno == errno.EINVAL
    else:
        raise AssertionError("the fake THP kernel took pages_to_scan=0")
