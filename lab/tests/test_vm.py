import json
import subprocess
import sys
import time
from dataclasses import asdict
from pathlib import Path

import pytest

from cpuinfer_lab import image, paths, vm


def _fake_qemu(name: str) -> subprocess.Popen:
    """A process whose argv looks like one of our qemus; it is really a sleeping python."""
    argv = ["qemu-system-x86_64", "-c", "import time; time.sleep(60)", "-name", f"cpuinfer-lab:{name},debug-threads=on"]
    proc = subprocess.Popen(argv, executable=sys.executable)
    deadline = time.monotonic() + 5
    while not Path(f"/proc/{proc.pid}/cmdline").read_bytes() and time.monotonic() < deadline:
        time.sleep(0.01)  # until the exec has replaced the forked image's (empty) command line
    return proc


def _write_pidfile(name: str, pid: int) -> None:
    directory = paths.vm_dir(name)
    directory.mkdir(parents=True, exist_ok=True)
    (directory / "qemu.pid").write_text(f"{pid}\n")


def test_running_pid_recognises_our_qemu_and_stop_ends_it(lab_state):
    proc = _fake_qemu("alpha")
    try:
        _write_pidfile("alpha", proc.pid)
        assert vm.running_pid("alpha") == proc.pid
        assert vm.stop("alpha", timeout=5) is True
        assert proc.wait(timeout=5) is not None
        assert vm.running_pid("alpha") is None
    finally:
        proc.kill()


def test_pidfile_of_another_vm_name_is_not_ours(lab_state):
    proc = _fake_qemu("alpha")
    try:
        _write_pidfile("beta", proc.pid)
        assert vm.running_pid("beta") is None
        assert vm.stop("beta") is False
        assert proc.poll() is None, "a process that is not beta's qemu must not be signalled"
    finally:
        proc.kill()


def test_recycled_pid_of_a_foreign_process_is_never_signalled(lab_state):
    foreign = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"])
    try:
        _write_pidfile("gamma", foreign.pid)
        assert vm.stop("gamma") is False
        assert foreign.poll() is None
    finally:
        foreign.kill()


def test_missing_or_garbage_pidfile(lab_state):
    assert vm.running_pid("nothing") is None
    _write_pidfile("junk", 0)
    (paths.vm_dir("junk") / "qemu.pid").write_text("not a pid")
    assert vm.running_pid("junk") is None


def test_qemu_argv_binds_forwards_to_loopback_and_restricts_the_guest(lab_state, tmp_path):
    from cpuinfer_lab import image

    img = image.Image("amd64", tmp_path / "img")
    spec = vm.VmSpec(name="n1", cpus=2, memory_mb=512)
    argv = vm._qemu_argv(spec, img, tmp_path, 2222, {"8080": 18080})
    netdev = argv[argv.index("-netdev") + 1]
    assert "restrict=on" in netdev
    assert "hostfwd=tcp:127.0.0.1:2222-:22" in netdev
    assert "hostfwd=tcp:127.0.0.1:18080-:8080" in netdev
    assert argv[argv.index("-accel") + 1] == "tcg,thread=multi,tb-size=128"
    assert argv[argv.index("-smp") + 1] == "2"
    assert argv[argv.index("-name") + 1] == "cpuinfer-lab:n1,debug-threads=on"  # vCPU threads named for pinning


def test_arm64_uses_virt_machine_and_its_console(lab_state, tmp_path):
    from cpuinfer_lab import image

    argv = vm._qemu_argv(vm.VmSpec(name="a", arch="arm64"), image.Image("arm64", tmp_path), tmp_path, 1, {})
    assert argv[0] == "qemu-system-aarch64"
    assert argv[argv.index("-M") + 1] == "virt"
    assert "console=ttyAMA0" in argv[argv.index("-append") + 1]
    assert argv[argv.index("-cpu") + 1] == "cortex-a72"


def test_record_round_trip(lab_state):
    record = vm.VmRecord("r", "amd64", 1, 512, "max", "tcg", 2200, {}, "/k", "/s", "/i")
    paths.vm_dir("r").mkdir(parents=True)
    (paths.vm_dir("r") / "vm.json").write_text(json.dumps(asdict(record)))
    assert vm.load_record("r") == record
    assert vm.list_running() == []  # recorded, but no qemu behind it


def test_a_vm_whose_name_starts_with_ours_is_not_ours(lab_state):
    proc = _fake_qemu("alpha2")
    try:
        _write_pidfile("alpha", proc.pid)
        assert vm.running_pid("alpha") is None
        _write_pidfile("alpha2", proc.pid)
        assert vm.running_pid("alpha2") == proc.pid
    finally:
        proc.kill()
        proc.wait()


def test_a_record_written_by_another_lab_version_still_loads(lab_state):
    """Checkouts share the state directory: a newer lab's extra keys, or an older one's missing
    optional keys, must not break `lab up` of this one (it lists every record)."""
    record = vm.VmRecord(name="n", arch="amd64", cpus=1, memory_mb=512, cpu_model="max", accel="tcg", ssh_port=2222,
                         forwarded={}, identity_file="k", serial_log="s", image="i")
    data = asdict(record)
    data.pop("pinning")  # an older lab
    data["numa"] = [0, 1]  # a newer lab
    directory = paths.vm_dir("n")
    directory.mkdir(parents=True)
    (directory / "vm.json").write_text(json.dumps(data))
    assert vm.load_record("n") == record
    (directory / "vm.json").write_text(json.dumps({"name": "n"}))  # not a record at all
    assert vm.load_record("n") is None


def test_two_numa_nodes_make_two_sockets_each_with_its_cpus_and_memory(lab_state, tmp_path):
    from cpuinfer_lab import image

    spec = vm.VmSpec(name="two", cpus=2, memory_mb=1536, numa_nodes=2)
    argv = vm._qemu_argv(spec, image.Image("amd64", tmp_path), tmp_path, 1, {})
    assert argv[argv.index("-smp") + 1] == "2,sockets=2,cores=1,threads=1"
    assert [argv[i + 1] for i, word in enumerate(argv) if word == "-numa"] == [
        "node,nodeid=0,cpus=0,memdev=ram0", "node,nodeid=1,cpus=1,memdev=ram1"]
    assert "memory-backend-ram,id=ram1,size=768M" in argv
    assert "-numa" not in vm._qemu_argv(vm.VmSpec(name="one", cpus=2), image.Image("amd64", tmp_path), tmp_path, 1, {})


def test_numa_nodes_that_do_not_split_the_vm_evenly_are_refused(lab_state, tmp_path):
    from cpuinfer_lab import image

    with pytest.raises(vm.LabError, match="do not split evenly"):
        vm._qemu_argv(vm.VmSpec(name="odd", cpus=3, numa_nodes=2), image.Image("amd64", tmp_path), tmp_path, 1, {})


def test_a_slow_ssh_answer_during_boot_is_asked_again_not_fatal(lab_state, monkeypatch):
    proc = _fake_qemu("slow")
    answers = [subprocess.TimeoutExpired(["ssh"], 30), subprocess.CompletedProcess(["ssh"], 255),
               subprocess.CompletedProcess(["ssh"], 0)]

    def fake_run(argv, **kwargs):
        answer = answers.pop(0)
        if isinstance(answer, Exception):
            raise answer
        return answer
    try:
        _write_pidfile("slow", proc.pid)
        record = vm.VmRecord("slow", "amd64", 1, 512, "max", "tcg", 2200, {}, "/k", "/s", "/i")
        monkeypatch.setattr(vm.subprocess, "run", fake_run)
        monkeypatch.setattr(vm.time, "sleep", lambda seconds: None)
        assert vm.wait_ready(record, timeout=60) >= 0
        assert answers == []
    finally:
        proc.kill()


def test_peers_boot_before_the_vms_that_reach_them_and_a_cycle_is_refused():
    door = vm.VmSpec(name="door", peers=["b", "a"])
    a, b = vm.VmSpec(name="a"), vm.VmSpec(name="b")
    assert [s.name for s in vm.boot_order([door, a, b])] == ["b", "a", "door"]
    with pytest.raises(vm.LabError, match="peers form a cycle"):
        vm.boot_order([vm.VmSpec(name="x", peers=["y"]), vm.VmSpec(name="y", peers=["x"])])


def test_a_peers_forwards_answer_inside_the_guest_through_socat(monkeypatch, tmp_path):
    records = {"b": vm.VmRecord(name="b", arch="amd64", cpus=1, memory_mb=1, cpu_model="max", accel="tcg",
                                ssh_port=1, forwarded={"8081": 28081, "22": 0}, identity_file="", serial_log="",
                                image="")}
    monkeypatch.setattr(vm, "load_record", records.get)
    monkeypatch.setattr(vm, "running_pid", lambda name: 42 if name in records else None)
    addresses, rules = vm.peer_forwards(["b"])
    assert addresses == {"b": "10.0.2.100"}
    assert "guestfwd=tcp:10.0.2.100:8081-cmd:socat - TCP:127.0.0.1:28081" in rules
    argv = vm._qemu_argv(vm.VmSpec(name="door"), image.Image("amd64", tmp_path), tmp_path, 1, {}, rules)
    netdev = argv[argv.index("-netdev") + 1]
    assert netdev.startswith("user,id=n0,restrict=on,") and "guestfwd=tcp:10.0.2.100:8081-cmd:socat" in netdev
    with pytest.raises(vm.LabError, match="peer VM c is not running"):
        vm.peer_forwards(["c"])


def test_a_controller_port_answers_in_the_guest_and_a_bad_one_is_refused(tmp_path):
    rules = vm.controller_forwards([39418])
    assert rules == ["guestfwd=tcp:10.0.2.99:39418-cmd:socat - TCP:127.0.0.1:39418"]
    argv = vm._qemu_argv(vm.VmSpec(name="pulls", controller_ports=[39418]), image.Image("amd64", tmp_path), tmp_path, 1, {}, rules)
    assert rules[0] in argv[argv.index("-netdev") + 1]
    for bad in (0, 70000, "9418", True):
        with pytest.raises(vm.LabError, match="is not a TCP port number"):
            vm.controller_forwards([bad])


def test_a_grub_vm_gets_a_boot_disk_and_starts_again_booting_it(lab_state, tmp_path):
    from cpuinfer_lab import boot_loader
    spec = vm.VmSpec(name="g", boot="grub")
    img = image.Image("amd64", tmp_path)
    argv = vm._qemu_argv(spec, img, tmp_path, 2222, {})
    assert "-kernel" in argv and boot_loader.BOOT_DEVICE in argv  # first start: direct, to install GRUB
    again = boot_loader.booting_from_disk(argv)
    assert not {"-kernel", "-initrd", "-append"} & set(again)
    assert boot_loader.BOOT_DEVICE + ",bootindex=0" in again
    assert again[again.index("-drive") + 1].startswith("file=%s" % (tmp_path / "disk.qcow2"))  # the same root disk
    with pytest.raises(ValueError):
        boot_loader.booting_from_disk(vm._qemu_argv(vm.VmSpec(name="k"), img, tmp_path, 2222, {}))


def test_grub_is_refused_on_arm64_and_unknown_boot_kinds(lab_state):
    for spec in (vm.VmSpec(name="a", arch="arm64", boot="grub"), vm.VmSpec(name="b", boot="pxe")):
        with pytest.raises(vm.LabError, match="the lab boots 'kernel'"):
            vm._launch(spec, print)


def test_the_grub_vm_keeps_the_labs_command_line_without_root_and_quiet():
    from cpuinfer_lab import boot_loader
    script = boot_loader.install_script("rw console=ttyS0 systemd.hostname=g")
    assert 'GRUB_CMDLINE_LINUX="rw console=ttyS0 systemd.hostname=g"' in script
    assert "grub-install --target=i386-pc /dev/vdb" in script and script.rstrip().endswith("sync")


def test_ports_chosen_for_one_vm_are_distinct_even_when_the_kernel_reuses_a_released_one(monkeypatch):
    """A port released before the next bind may come back (CI got 60117 for two forwards of one VM);
    here every bind of a released socket gets the port the previous socket had."""
    released = []

    class ReusingSocket:
        def __init__(self, *args):
            self.port = None

        def bind(self, address):
            self.port = released.pop() if released else 40000 + len(bound)
            bound.append(self.port)

        def getsockname(self):
            return (vm.LOOPBACK, self.port)

        def close(self):
            released.append(self.port)

    bound = []
    monkeypatch.setattr(vm.socket, "socket", ReusingSocket)
    ports = vm._free_ports(4)
    assert len(set(ports)) == 4


def test_a_port_taken_before_qemu_binds_it_is_chosen_again_other_errors_are_not(lab_state, monkeypatch, tmp_path):
    monkeypatch.setattr(vm.images, "build", lambda arch, log: image.Image(arch, tmp_path))
    monkeypatch.setattr(vm.images, "prune_stale", lambda *args, **kwargs: None)
    monkeypatch.setattr(vm.subprocess, "run", lambda *args, **kwargs: subprocess.CompletedProcess(args, 0))
    starts = []

    def start(spec, record, argv, pin_offset, failure):
        starts.append(record.forwarded)
        if len(starts) == 1:
            raise vm.LabError(f"VM {spec.name}: {failure}: qemu: {vm.PORT_TAKEN} 'tcp:127.0.0.1:1-:8081'")

    monkeypatch.setattr(vm, "_start_qemu", start)
    logged = []
    record = vm._launch(vm.VmSpec(name="p", forwards=[8081, 9081]), logged.append)
    assert len(starts) == 2 and record.forwarded == starts[1] and "new ports" in logged[-1]

    def broken(spec, record, argv, pin_offset, failure):
        starts.append(record.forwarded)
        raise vm.LabError("VM p: qemu did not start: no such machine")

    starts.clear()
    monkeypatch.setattr(vm, "_start_qemu", broken)
    with pytest.raises(vm.LabError, match="no such machine"):
        vm._launch(vm.VmSpec(name="p", forwards=[8081]), logged.append)
    assert len(starts) == 1
