"""Properties of the modules that write files (sysctl, kernel_settings, managed_files, release), stricter
than test_properties.py's: a failed run leaves the tree byte-, mode- and owner-identical with no new
directory, check mode writes nothing at all, and no run writes outside root (a directory of the fake
host links out of it, to a sibling that must stay untouched).

Kernel knobs (/proc, /sys) are compared as the kernel shows them: a value put back reads the same,
though the fake's file lost its newline."""

import tempfile
from pathlib import Path

from hypothesis import HealthCheck, event, given, settings
from hypothesis import strategies as st

from ansible_collections.cpuinfer.llm.plugins.modules import kernel_settings, managed_files, release, sysctl

from fake_hosts import files_host, kernel_host, sysctl_host
from kernel_tree import full_snapshot

SETTINGS = settings(max_examples=150, deadline=None, derandomize=True,
                    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow])
KNOBS = ("proc/", "sys/")

PATHS = st.sampled_from([
    "/etc/a.conf", "/etc//a.conf", "/etc/./a.conf", "/etc/a.conf/", "/etc/demo.d/b.env", "/opt/x/y/z.service",
    "/etc/linked.d/c.conf", "/etc/linked.d/new/d.conf", "/etc/systemd/system/existing.service", "/etc/x\x00",
    "/etc/../x", "relative", "", "/", "/etc/tmpfiles.d/cpuinfer-thp.conf", "/etc/sysctl.d/90-cpuinfer-tuning.conf",
    "/var/lib/cpuinfer/releases/demo.json",
])
MODES = st.sampled_from(["0644", "0600", "644", "0o644", "rw", 420, 644, True, None, "0644\n", 0.5])
# (no lone surrogates: Ansible's JSON cannot carry them to a module; test_persist covers them)
TEXT = st.sampled_from(["", "x", "a = 1\n", "☃\n", "\x00", "é\tx"])
NAMES = st.sampled_from(["root", "nobody", "no-such-user", "ro\x00ot", ""])


def _entry(with_text):
    optional = {"mode": MODES, "owner": NAMES, "group": NAMES}
    if with_text:
        return st.builds(lambda path, option, text, extra: dict(extra, path=path, **{option: text}),
                         PATHS, st.sampled_from(["content", "secret_content"]), TEXT,
                         st.fixed_dictionaries({}, optional=optional))
    return st.builds(lambda path, extra: dict(extra, path=path), PATHS, st.fixed_dictionaries({}, optional=optional))


FILES = {"files": st.lists(_entry(True), max_size=3), "directories": st.lists(_entry(False), max_size=2)}
DROPINS = st.sampled_from(["/etc/sysctl.d/90-cpuinfer-tuning.conf", "/etc/sysctl.d//90-x.conf", "/etc/new.d/90-x.conf",
                           "/etc/linked.d/90-x.conf", "/etc/tmpfiles.d/cpuinfer-thp.conf", "", "/", "/etc/x\x00"])
SYSCTL_VALUES = st.dictionaries(
    st.sampled_from(["kernel.numa_balancing", "kernel.sched_rt_runtime_us", "kernel.no_such_knob", "kernel.numa_balancing\n",
                     "kernel/x", "kernel.perf_event_paranoid"]),
    st.one_of(st.integers(-2, 1000001), TEXT, st.sampled_from(["０", "1 ☃", "0\t1", True, None, [1]])), max_size=3)
SYSCTL = st.fixed_dictionaries({"values": SYSCTL_VALUES}, optional={
    "dropin": DROPINS, "missing": st.sampled_from(["skip", "fail"]), "persistent": st.booleans()})


def _linked_host(build):
    """The module's fake host, plus /etc/linked.d: a link to a directory beside the root."""
    def host(top, monkeypatch):
        root, outside = top / "root", top / "outside"
        root.mkdir()
        outside.mkdir()
        (outside / "kept.conf").write_text("outside the root\n")
        build(root, monkeypatch)
        (root / "etc").mkdir(exist_ok=True)
        (root / "etc" / "linked.d").symlink_to(outside)
        return root, outside
    return host


def as_shown(root):
    """full_snapshot, with knob files compared as the kernel shows them (stripped)."""
    return dict((path, entry[:4] + (entry[4].strip(),) if path.startswith(KNOBS) else entry)
                for path, entry in full_snapshot(root).items())


def check(run_module, module, host, monkeypatch, args, check_mode):
    with tempfile.TemporaryDirectory() as directory:
        root, outside = host(Path(directory), monkeypatch)
        before, outside_before = as_shown(root), full_snapshot(outside)
        failed, result = run_module(module, dict(args, root=str(root)), check=check_mode)
        event("%s %s" % ("failed" if failed else "ok", "check" if check_mode else "real"))
        assert "exception" not in result, result.get("exception")
        assert full_snapshot(outside) == outside_before, (args, result)
        if failed:
            assert result["msg"].strip() and "internal error" not in result["msg"], result
        if failed or check_mode:
            assert as_shown(root) == before, (args, result)
            return
        again_failed, again = run_module(module, dict(args, root=str(root)))
        assert not again_failed and not again["changed"], (args, again)


@SETTINGS
@given(args=SYSCTL, check_mode=st.booleans())
def test_sysctl(run_module, monkeypatch, args, check_mode):
    check(run_module, sysctl, _linked_host(sysctl_host), monkeypatch, args, check_mode)


@SETTINGS
@given(args=st.fixed_dictionaries({}, optional=dict(FILES, report=st.lists(PATHS, max_size=2))), check_mode=st.booleans())
def test_managed_files(run_module, monkeypatch, args, check_mode):
    check(run_module, managed_files, _linked_host(files_host), monkeypatch, args, check_mode)


@SETTINGS
@given(args=st.fixed_dictionaries({"name": st.sampled_from(["demo", "demo\n", "a/b"]),
                                   "patterns": st.lists(PATHS.map(lambda p: p.rstrip("/") + "*" if p else p), min_size=1,
                                                        max_size=2)},
                                  optional=dict(FILES, state=st.sampled_from(["recorded", "rolled_back"]),
                                                store=st.sampled_from(["/var/lib/cpuinfer/releases", "/etc/linked.d/store",
                                                                       "/var//lib/x/", "relative"]))),
       check_mode=st.booleans())
def test_release(run_module, monkeypatch, args, check_mode):
    check(run_module, release, _linked_host(files_host), monkeypatch, args, check_mode)


KERNEL = st.fixed_dictionaries({}, optional=dict(
    FILES, sysctl=SYSCTL,
    thp=st.fixed_dictionaries({}, optional={"enabled": st.sampled_from(["madvise", "never", "sometimes"]),
                                            "defrag": st.sampled_from(["never", "defer"])}),
    perf_paranoid=st.fixed_dictionaries({}, optional={"level": st.integers(-2, 5)})))


@SETTINGS
@given(args=KERNEL, check_mode=st.booleans())
def test_kernel_settings(run_module, monkeypatch, args, check_mode):
    check(run_module, kernel_settings, _linked_host(kernel_host), monkeypatch, args, check_mode)
