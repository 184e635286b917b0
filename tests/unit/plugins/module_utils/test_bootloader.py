import pytest

from ansible_collections.cpuinfer.llm.plugins.module_utils import _bootloader as bl

OS_RELEASE = {
    "debian": 'ID=debian\nVERSION_ID="12"\n',
    "ubuntu": 'ID=ubuntu\nID_LIKE=debian\n',
    "openeuler": 'NAME="openEuler"\nID="openEuler"\nVERSION_ID="22.03"\n',
    "rocky": 'ID="rocky"\nID_LIKE="rhel centos fedora"\n',
    "kylin": 'NAME="Kylin Linux Advanced Server"\nID="kylin"\nVERSION_ID="V10"\n',
}


def _tree(tmp_path, release, files=()):
    (tmp_path / "etc").mkdir(exist_ok=True)
    (tmp_path / "etc/os-release").write_text(OS_RELEASE[release])
    for relative in files:
        path = tmp_path / relative.lstrip("/")
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text("")
    return str(tmp_path)


@pytest.mark.parametrize("release, family", [("debian", "debian"), ("ubuntu", "debian"), ("openeuler", "rpm"), ("rocky", "rpm")])
def test_the_family_comes_from_os_release(tmp_path, release, family):
    assert bl.os_family(_tree(tmp_path, release)) == family


@pytest.mark.parametrize("package_manager, family", [("/usr/bin/rpm", "rpm"), ("/usr/bin/dpkg", "debian")])
def test_kylin_ships_both_families_so_its_package_manager_decides(tmp_path, package_manager, family):
    assert bl.os_family(_tree(tmp_path, "kylin", [package_manager])) == family


def test_an_unknown_os_has_no_family_and_no_tool(tmp_path):
    root = _tree(tmp_path, "kylin")
    assert bl.os_family(root) is None
    with pytest.raises(bl.BootLoaderError, match="cannot tell this host's OS family"):
        bl.boot_loader_tool(root, None)


def test_a_host_without_its_familys_tool_is_refused_by_name(tmp_path):
    with pytest.raises(bl.BootLoaderError, match="without /usr/sbin/grubby"):
        bl.boot_loader_tool(_tree(tmp_path, "openeuler"), "rpm")
    assert bl.boot_loader_tool(_tree(tmp_path, "openeuler", ["/usr/sbin/grubby"]), "rpm") == "/usr/sbin/grubby"


def test_arguments_that_would_read_differently_in_a_shell_or_grubby_are_refused():
    assert bl.validate_args({"nohz_full": "2-15", "nosmt": None, "isolcpus": "managed_irq,domain,2-15"}) == []
    problems = bl.validate_args({"a b": "1", "x": "1 2", "y": '"1"', "z": "$(reboot)", "w": "a\\b"})
    assert len(problems) == 5, problems
    assert bl.validate_name("isolation") == [] and bl.validate_name("../etc") != []


def test_the_dropin_appends_to_grubs_default_line_and_reads_back():
    text = bl.render_dropin({"rcu_nocbs": "1", "nohz_full": "1", "nosmt": None}, "# header\n")
    assert text == '# header\nGRUB_CMDLINE_LINUX_DEFAULT="$GRUB_CMDLINE_LINUX_DEFAULT nohz_full=1 nosmt rcu_nocbs=1"\n'
    assert bl.parse_dropin(text) == {"nohz_full": "1", "nosmt": None, "rcu_nocbs": "1"}
    assert bl.render_dropin({}, "# header\n") is None
    assert bl.parse_dropin('GRUB_CMDLINE_LINUX="quiet"\n') == {}


def test_the_running_kernel_keeps_the_last_of_a_repeated_key(tmp_path):
    (tmp_path / "proc").mkdir()
    (tmp_path / "proc/cmdline").write_text('BOOT_IMAGE=/vmlinuz root=/dev/vda rw nohz_full=0 quiet nohz_full=1\n')
    assert bl.running_args(str(tmp_path))["nohz_full"] == "1"
    assert bl.running_args(str(tmp_path))["quiet"] is None


def test_reboot_required_when_the_running_kernel_lacks_or_still_has_an_argument():
    running = {"nohz_full": "1", "quiet": None}
    assert not bl.reboot_required(running, {"nohz_full": "1"}, set())
    assert bl.reboot_required(running, {"nohz_full": "1-3"}, set())
    assert bl.reboot_required(running, {}, {"nohz_full"})
    assert not bl.reboot_required(running, {}, {"rcu_nocbs"})


GRUBBY_INFO = '''index=0
kernel="/boot/vmlinuz-5.10.0-153.oe2203.aarch64"
args="ro root=/dev/mapper/root nohz_full=2-3 rcu_nocbs=2-3"
root="/dev/mapper/root"
initrd="/boot/initramfs-5.10.0-153.oe2203.aarch64.img"
title="openEuler (5.10.0-153) 22.03 (LTS-SP1)"
index=1
kernel="/boot/vmlinuz-0-rescue"
args="ro root=/dev/mapper/root"
'''


def test_grubby_info_reads_every_entry():
    entries = bl.parse_grubby_info(GRUBBY_INFO)
    assert [e["kernel"] for e in entries] == ["/boot/vmlinuz-5.10.0-153.oe2203.aarch64", "/boot/vmlinuz-0-rescue"]
    assert entries[0]["args"]["nohz_full"] == "2-3" and "nohz_full" not in entries[1]["args"]
    # the rescue entry lacks them: the host does not boot with them "everywhere"
    assert bl.grubby_common_args(entries, {"nohz_full", "ro"}) == {"ro": None}


def test_grubby_plan_touches_only_entries_that_differ_and_keeps_their_previous_tokens():
    entries = bl.parse_grubby_info(GRUBBY_INFO)
    plan = bl.grubby_plan(entries, {"nohz_full": "2-3", "rcu_nocbs": "2-3"}, set())
    assert plan == [("/boot/vmlinuz-0-rescue", {"nohz_full": "2-3", "rcu_nocbs": "2-3"}, [], {})]
    plan = bl.grubby_plan(entries, {}, {"nohz_full", "rcu_nocbs"})
    assert plan == [("/boot/vmlinuz-5.10.0-153.oe2203.aarch64", {}, ["nohz_full", "rcu_nocbs"],
                     {"nohz_full": "2-3", "rcu_nocbs": "2-3"})]
    assert bl.grubby_argv("/usr/sbin/grubby", "ALL", {"b": "1", "a": None}, ["c"]) == [
        "/usr/sbin/grubby", "--update-kernel=ALL", "--args=a b=1", "--remove-args=c"]
