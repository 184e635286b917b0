"""kernel_cmdline on fake roots of each OS family; update-grub and grubby are stood in for by fakes that
keep state the way the real tools do (a grub.cfg made from the drop-ins; boot entries' args)."""

import shlex

import pytest

from ansible.module_utils import basic
from ansible_collections.cpuinfer.llm.plugins.module_utils import _bootloader
from ansible_collections.cpuinfer.llm.plugins.modules import kernel_cmdline

from kernel_tree import snapshot

ISOLATION = {"nohz_full": "1-3", "rcu_nocbs": "1-3", "irqaffinity": "0"}
DROPIN = "etc/default/grub.d/91-cpuinfer-isolation.cfg"


class FakeTools:
    """update-grub: copies the drop-ins' arguments into boot/grub/grub.cfg. grubby: entries' args."""

    def __init__(self, root):
        self.root, self.calls, self.fail, self.fail_when = root, [], set(), lambda argv: False
        self.entries = {"/boot/vmlinuz-5.10": {"ro": None, "root": "/dev/sda2"},
                        "/boot/vmlinuz-0-rescue": {"ro": None}}

    def __call__(self, argv, **kwargs):  # set on the class: called without the module
        self.calls.append(list(argv))
        tool = argv[0].rsplit("/", 1)[-1]
        if tool in self.fail or self.fail_when(argv):
            return 1, "", "%s: simulated failure" % tool
        if tool == "update-grub":
            grub_d = self.root / "etc/default/grub.d"
            args = {}
            for path in sorted(grub_d.glob("*.cfg")) if grub_d.is_dir() else []:
                args.update(_bootloader.parse_dropin(path.read_text()))
            (self.root / "boot/grub").mkdir(parents=True, exist_ok=True)
            (self.root / "boot/grub/grub.cfg").write_text("linux /vmlinuz " + _bootloader.render_args(args) + "\n")
            return 0, "", ""
        if argv[1] == "--info=ALL":
            text = "".join('index=%d\nkernel="%s"\nargs="%s"\n' % (i, k, _bootloader.render_args(a))
                           for i, (k, a) in enumerate(sorted(self.entries.items())))
            return 0, text, ""
        kernel = argv[1].split("=", 1)[1]
        for entry in (self.entries if kernel == "ALL" else [kernel]):
            for option in argv[2:]:
                name, value = option.split("=", 1)
                if name == "--args":
                    self.entries[entry].update(_bootloader.parse_args(value))
                else:
                    for key in shlex.split(value):
                        self.entries[entry].pop(key, None)
        return 0, "", ""


def _root(tmp_path, family, cmdline="root=/dev/vda rw quiet"):
    (tmp_path / "etc/default/grub.d").mkdir(parents=True)
    (tmp_path / "proc").mkdir()
    (tmp_path / "proc/cmdline").write_text(cmdline + "\n")
    (tmp_path / "usr/sbin").mkdir(parents=True)
    if family == "debian":
        (tmp_path / "etc/os-release").write_text("ID=debian\n")
        (tmp_path / "usr/sbin/update-grub").write_text("")
    else:
        (tmp_path / "etc/os-release").write_text('ID="openEuler"\nVERSION_ID="22.03"\n')
        (tmp_path / "usr/sbin/grubby").write_text("")
    return tmp_path


@pytest.fixture
def tools(monkeypatch):
    holder = {}

    def install(root):
        holder["tools"] = FakeTools(root)
        monkeypatch.setattr(basic.AnsibleModule, "run_command", holder["tools"])
        return holder["tools"]
    return install


def test_debian_writes_the_dropin_runs_update_grub_and_asks_for_a_reboot(tmp_path, tools, run_module):
    root = _root(tmp_path, "debian")
    fake = tools(root)
    failed, result = run_module(kernel_cmdline, {"name": "isolation", "args": ISOLATION, "root": str(root)})
    assert not failed, result
    assert result["changed"] and result["reboot_required"] and result["family"] == "debian"
    assert result["before"] == {} and result["after"] == ISOLATION
    assert 'GRUB_CMDLINE_LINUX_DEFAULT="$GRUB_CMDLINE_LINUX_DEFAULT irqaffinity=0 nohz_full=1-3 rcu_nocbs=1-3"' in (root / DROPIN).read_text()
    assert "nohz_full=1-3" in (root / "boot/grub/grub.cfg").read_text()
    assert fake.calls == [["/usr/sbin/update-grub"]]


def test_debian_second_run_changes_nothing_and_a_booted_kernel_needs_no_reboot(tmp_path, tools, run_module):
    root = _root(tmp_path, "debian", "root=/dev/vda rw nohz_full=1-3 rcu_nocbs=1-3 irqaffinity=0")
    fake = tools(root)
    args = {"name": "isolation", "args": ISOLATION, "root": str(root)}
    assert run_module(kernel_cmdline, args)[1]["changed"]
    failed, result = run_module(kernel_cmdline, args)
    assert not failed and not result["changed"] and not result["reboot_required"], result
    assert result["running"] == ISOLATION
    assert len(fake.calls) == 1  # update-grub only when the drop-in changed


def test_debian_absent_removes_the_dropin_and_the_running_arguments_ask_for_a_reboot(tmp_path, tools, run_module):
    root = _root(tmp_path, "debian", "root=/dev/vda nohz_full=1-3 rcu_nocbs=1-3 irqaffinity=0")
    tools(root)
    run_module(kernel_cmdline, {"name": "isolation", "args": ISOLATION, "root": str(root)})
    failed, result = run_module(kernel_cmdline, {"name": "isolation", "state": "absent", "root": str(root)})
    assert not failed and result["changed"] and result["reboot_required"], result
    assert result["before"] == ISOLATION and result["after"] == {}
    assert not (root / DROPIN).exists()
    assert "nohz_full" not in (root / "boot/grub/grub.cfg").read_text()


def test_check_mode_writes_nothing_runs_nothing_and_shows_the_dropin(tmp_path, tools, run_module):
    root = _root(tmp_path, "debian")
    fake = tools(root)
    before = snapshot(root)
    failed, result = run_module(kernel_cmdline, {"name": "isolation", "args": ISOLATION, "root": str(root)}, check=True, diff=True)
    assert not failed and result["changed"] and result["reboot_required"]
    assert snapshot(root) == before and fake.calls == []
    assert result["diff"]["before"] == "" and "nohz_full=1-3" in result["diff"]["after"]


def test_a_failed_update_grub_leaves_the_old_dropin(tmp_path, tools, run_module):
    root = _root(tmp_path, "debian")
    fake = tools(root)
    run_module(kernel_cmdline, {"name": "isolation", "args": {"nohz_full": "1"}, "root": str(root)})
    old = (root / DROPIN).read_text()
    fake.fail.add("update-grub")
    failed, result = run_module(kernel_cmdline, {"name": "isolation", "args": ISOLATION, "root": str(root)})
    assert failed and "update-grub failed" in result["msg"] and "simulated failure" in result["msg"], result
    assert (root / DROPIN).read_text() == old


def test_bad_input_is_refused_whole_before_anything_is_written(tmp_path, tools, run_module):
    root = _root(tmp_path, "debian")
    fake = tools(root)
    failed, result = run_module(kernel_cmdline, {"name": "Isolation!", "args": {"nohz_full": "1 2", "x": "$(id)"},
                                                 "root": str(root)})
    assert failed and result["msg"].startswith("invalid request, nothing written"), result
    assert "name 'Isolation!'" in result["msg"] and "nohz_full" in result["msg"] and "x=" in result["msg"]
    assert fake.calls == [] and not (root / DROPIN).exists()


def test_a_host_without_a_boot_loader_tool_is_refused_by_name(tmp_path, tools, run_module):
    root = _root(tmp_path, "debian")
    (root / "usr/sbin/update-grub").unlink()
    tools(root)
    failed, result = run_module(kernel_cmdline, {"name": "isolation", "args": ISOLATION, "root": str(root)})
    assert failed and "without /usr/sbin/update-grub (package grub2-common)" in result["msg"], result


def test_rpm_updates_every_entry_through_grubby_and_is_idempotent(tmp_path, tools, run_module):
    root = _root(tmp_path, "rpm")
    fake = tools(root)
    failed, result = run_module(kernel_cmdline, {"name": "isolation", "args": ISOLATION, "root": str(root)})
    assert not failed and result["changed"] and result["family"] == "rpm" and result["reboot_required"], result
    assert all(entry[k] == v for entry in fake.entries.values() for k, v in ISOLATION.items())
    assert [c[1] for c in fake.calls[1:]] == ["--update-kernel=/boot/vmlinuz-0-rescue", "--update-kernel=/boot/vmlinuz-5.10"]
    calls = len(fake.calls)
    failed, result = run_module(kernel_cmdline, {"name": "isolation", "args": ISOLATION, "root": str(root)})
    assert not failed and not result["changed"] and result["before"] == ISOLATION
    assert len(fake.calls) == calls + 1  # only --info=ALL


def test_rpm_absent_removes_only_the_named_keys(tmp_path, tools, run_module):
    root = _root(tmp_path, "rpm")
    fake = tools(root)
    run_module(kernel_cmdline, {"name": "isolation", "args": ISOLATION, "root": str(root)})
    failed, result = run_module(kernel_cmdline, {"name": "isolation", "state": "absent", "root": str(root),
                                                 "args": dict.fromkeys(ISOLATION)})
    assert not failed and result["changed"] and result["after"] == {}, result
    assert fake.entries["/boot/vmlinuz-5.10"] == {"ro": None, "root": "/dev/sda2"}


def test_rpm_a_failed_grubby_puts_back_the_entries_already_changed(tmp_path, tools, run_module):
    root = _root(tmp_path, "rpm")
    fake = tools(root)
    fake.entries["/boot/vmlinuz-0-rescue"]["nohz_full"] = "7"
    original = dict((k, dict(v)) for k, v in fake.entries.items())
    # the rescue entry is written first (sorted), the second entry's write fails
    fake.fail_when = lambda argv: argv[1] == "--update-kernel=/boot/vmlinuz-5.10" and "nohz_full=1-3" in " ".join(argv)
    failed, result = run_module(kernel_cmdline, {"name": "isolation", "args": ISOLATION, "root": str(root)})
    assert failed and "simulated failure" in result["msg"] and "put back" in result["msg"], result
    assert fake.entries == original


def test_absent_on_a_host_without_a_boot_loader_tool_is_already_true(tmp_path, tools, run_module):
    root = _root(tmp_path, "debian", "root=/dev/vda rw nohz_full=1")
    (root / "usr/sbin/update-grub").unlink()
    fake = tools(root)
    failed, result = run_module(kernel_cmdline, {"name": "isolation", "state": "absent", "root": str(root),
                                                 "args": {"nohz_full": None}})
    assert not failed and not result["changed"] and result["boot_loader_tool"] is None, result
    assert result["running"] == {"nohz_full": "1"} and result["reboot_required"] and fake.calls == []
