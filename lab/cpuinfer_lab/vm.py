"""Boot, find and stop lab VMs. Every VM is a qcow2 overlay over a cached base image.

A VM is stopped only through its own pidfile, and only after /proc confirms that pid is still
the qemu we started for that name, so a recycled pid is never signalled.
"""

import hashlib
import json
import os
import signal
import socket
import subprocess
import time
from dataclasses import asdict, dataclass, field, fields
from pathlib import Path

from . import boot_loader
from . import image as images
from . import paths, threads

SSH_OPTIONS = [
    "-o", "BatchMode=yes",
    "-o", "StrictHostKeyChecking=no",
    "-o", "UserKnownHostsFile=/dev/null",
    "-o", "LogLevel=ERROR",
    "-o", "IdentitiesOnly=yes",
    "-o", "ConnectTimeout=5",
]
LOOPBACK = "127.0.0.1"
QEMU_BY_ARCH = {"amd64": "qemu-system-x86_64", "arm64": "qemu-system-aarch64"}
DEFAULT_CPU_MODEL = {"amd64": "max", "arm64": "cortex-a72"}


class LabError(RuntimeError):
    """A lab step failed; the message says which and where to look."""


@dataclass
class VmSpec:
    name: str
    arch: str = "amd64"
    cpus: int = 1
    memory_mb: int = 1024
    cpu_model: str = ""
    accel: str = "tcg"
    forwards: list[int] = field(default_factory=list)  # guest TCP ports reachable on 127.0.0.1
    pin: bool = False  # vCPU n on host CPU n, qemu's other threads on host CPU 0 (threads.py)
    numa_nodes: int = 1  # >1: one socket per node, the vCPUs and memory split evenly (a two-socket host)
    # VMs this one reaches: peer n's forwarded ports answer in the guest on PEER_NETWORK + n (a front
    # door in front of other lab hosts); slirp's restrict=on leaves explicit forwards working
    peers: list[str] = field(default_factory=list)
    # ports of the controller's loopback this VM reaches, at CONTROLLER_ADDRESS:PORT in the guest (a repository
    # the controller serves to a pull-mode host); restrict=on lets nothing else out
    controller_ports: list[int] = field(default_factory=list)
    # "grub": the VM boots through its own GRUB after its first start (boot_loader.py), so a kernel
    # command line written to its boot loader applies at its next reboot; amd64 only
    boot: str = "kernel"


@dataclass
class VmRecord:
    name: str
    arch: str
    cpus: int
    memory_mb: int
    cpu_model: str
    accel: str
    ssh_port: int
    forwarded: dict[str, int]
    identity_file: str
    serial_log: str
    image: str
    pinning: dict[str, list[int]] = field(default_factory=dict)  # thread name -> host CPUs, when pinned
    peer_addresses: dict[str, str] = field(default_factory=dict)  # peer VM -> its address inside this guest
    boot: str = "kernel"

    def inventory_vars(self, user: str = "lab") -> dict:
        return {
            "ansible_host": LOOPBACK,
            "ansible_port": self.ssh_port,
            "ansible_user": user,
            "ansible_ssh_private_key_file": self.identity_file,
            "ansible_ssh_common_args": " ".join(SSH_OPTIONS[:-2]),
            "ansible_become": user != "root",
            # the images' Python, named: interpreter discovery would cost every run a round trip per host
            "ansible_python_interpreter": "/usr/bin/python3",
            "lab_arch": self.arch,
            "lab_cpu_model": self.cpu_model,
            "lab_forwarded_ports": self.forwarded,
            "lab_peer_addresses": self.peer_addresses,
        }


PEER_NETWORK_FIRST = 100  # 10.0.2.100 onwards: outside slirp's DHCP range and its host, DNS and guest addresses
CONTROLLER_ADDRESS = "10.0.2.99"  # below the peers, outside slirp's DHCP range and its own addresses


def peer_forwards(peers: list[str]) -> tuple[dict[str, str], list[str]]:
    """({peer: address in the guest}, qemu guestfwd rules): each of a running peer's forwarded ports,
    reached by a socat per connection to its loopback forward."""
    addresses, rules = {}, []
    for index, peer in enumerate(peers):
        record = load_record(peer)
        if record is None or running_pid(peer) is None:
            raise LabError(f"peer VM {peer} is not running: boot it first (start_many boots peers first)")
        address = f"10.0.2.{PEER_NETWORK_FIRST + index}"
        addresses[peer] = address
        rules += [f"guestfwd=tcp:{address}:{guest}-cmd:socat - TCP:{LOOPBACK}:{host}"
                  for guest, host in sorted(record.forwarded.items())]
    return addresses, rules


def controller_forwards(ports: list[int]) -> list[str]:
    """qemu guestfwd rules: each controller port answers in the guest at CONTROLLER_ADDRESS, a socat per connection."""
    for port in ports:
        if isinstance(port, bool) or not isinstance(port, int) or not 0 < port < 65536:
            raise LabError(f"controller port {port!r} is not a TCP port number")
    return [f"guestfwd=tcp:{CONTROLLER_ADDRESS}:{port}-cmd:socat - TCP:{LOOPBACK}:{port}" for port in ports]


def boot_order(specs: list["VmSpec"]) -> list["VmSpec"]:
    """Peers before the VMs that reach them (their forwarded ports must exist first)."""
    by_name = {spec.name: spec for spec in specs}
    ordered: list[VmSpec] = []

    def visit(spec, path=()):
        if spec in ordered:
            return
        if spec.name in path:
            raise LabError(f"VM {spec.name}: peers form a cycle ({' -> '.join(path + (spec.name,))})")
        for peer in spec.peers:
            if peer in by_name:
                visit(by_name[peer], path + (spec.name,))
        ordered.append(spec)

    for spec in specs:
        visit(spec)
    return ordered


def _free_ports(count: int) -> list[int]:
    """count distinct loopback ports free now. Every socket stays bound until all are chosen: a port
    released before the next is asked for can be handed out again (CI once got one port for two forwards)."""
    sockets: list[socket.socket] = []
    try:
        while len(sockets) < count:
            sockets.append(socket.socket(socket.AF_INET, socket.SOCK_STREAM))
            sockets[-1].bind((LOOPBACK, 0))
        return [sock.getsockname()[1] for sock in sockets]
    finally:
        for sock in sockets:
            sock.close()


# qemu's words when a port chosen free was taken (by another stage's VM) before qemu bound it
PORT_TAKEN = "Could not set up host forwarding rule"
PORT_ATTEMPTS = 3


def _machine_id(name: str) -> str:
    return hashlib.sha256(f"cpuinfer-lab/{name}".encode()).hexdigest()[:32]


def _qemu_marker(name: str) -> str:
    return f"cpuinfer-lab:{name}"


def running_pid(name: str) -> int | None:
    """The pid of this VM's qemu, or None; a stale or foreign pidfile counts as not running."""
    pidfile = paths.vm_dir(name) / "qemu.pid"
    try:
        pid = int(pidfile.read_text(encoding="ascii").strip())
        argv = Path(f"/proc/{pid}/cmdline").read_bytes().split(b"\0")
    except (OSError, ValueError):
        return None
    is_qemu = os.path.basename(argv[0].decode(errors="replace")).startswith("qemu-system-")
    marker = _qemu_marker(name).encode()
    if is_qemu and any(arg == marker or arg.startswith(marker + b",") for arg in argv):
        return pid
    return None


def load_record(name: str) -> VmRecord | None:
    """The VM's record; None when there is none. Keys another version of the lab wrote (the state
    directory is shared by every checkout on this machine) are left out, missing ones defaulted."""
    try:
        data = json.loads((paths.vm_dir(name) / "vm.json").read_text(encoding="utf-8"))
        known = {f.name for f in fields(VmRecord)}
        return VmRecord(**{key: value for key, value in data.items() if key in known})
    except (OSError, ValueError, TypeError):
        return None


def list_running() -> list[VmRecord]:
    root = paths.state_root() / "vms"
    if not root.is_dir():
        return []
    records = []
    for entry in sorted(root.iterdir()):
        record = load_record(entry.name)
        if record and running_pid(entry.name):
            records.append(record)
    return records


def stop(name: str, timeout: float = 20.0) -> bool:
    """Stop the VM if it is ours and running; True when something was stopped."""
    pid = running_pid(name)
    if pid is None:
        return False
    os.kill(pid, signal.SIGTERM)
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline and running_pid(name) == pid:
        time.sleep(0.2)
    if running_pid(name) == pid:
        os.kill(pid, signal.SIGKILL)
        while running_pid(name) == pid:
            time.sleep(0.1)
    return True


def _kernel_append(spec: VmSpec) -> str:
    console = "ttyS0" if spec.arch == "amd64" else "ttyAMA0"
    return (f"root=/dev/vda rw quiet fsck.mode=skip console={console} "
            f"systemd.hostname={spec.name} systemd.machine_id={_machine_id(spec.name)}")


def _qemu_argv(spec: VmSpec, img: images.Image, vmdir: Path, ssh_port: int, forwarded: dict[str, int],
               guestfwds: list[str] | None = None) -> list[str]:
    cpu_model = spec.cpu_model or DEFAULT_CPU_MODEL[spec.arch]
    if spec.accel == "kvm":
        accel, cpu_model = "kvm", "host"
    else:
        accel = "tcg,thread=multi,tb-size=128"  # tb-size only counts inside this same -accel
    hostfwd = [f"hostfwd=tcp:{LOOPBACK}:{ssh_port}-:22"]
    hostfwd += [f"hostfwd=tcp:{LOOPBACK}:{host}-:{guest}" for guest, host in forwarded.items()]
    argv = [
        QEMU_BY_ARCH[spec.arch],
        "-name", _qemu_marker(spec.name) + ",debug-threads=on",  # threads named "CPU n/TCG" etc.
        "-accel", accel,
        "-cpu", cpu_model,
        "-m", str(spec.memory_mb),
        "-smp", str(spec.cpus),
        "-kernel", str(img.kernel),
        "-initrd", str(img.initrd),
        "-append", _kernel_append(spec),
        "-drive", f"file={vmdir / 'disk.qcow2'},format=qcow2,if=none,id=disk0,cache=unsafe",
        "-device", "virtio-blk-pci,drive=disk0",
        *(boot_loader.boot_drive_options(vmdir / boot_loader.BOOT_DISK) if spec.boot == "grub" else []),
        # restrict=on: the guest reaches nothing outside; only the forwarded loopback ports come in
        "-netdev", "user,id=n0,restrict=on," + ",".join(hostfwd + (guestfwds or [])),
        "-device", "virtio-net-pci,netdev=n0",
        "-display", "none",
        "-serial", f"file:{vmdir / 'serial.log'}",
        "-pidfile", str(vmdir / "qemu.pid"),
        "-daemonize",
    ]
    if spec.numa_nodes > 1:
        argv[argv.index("-smp") + 1:argv.index("-smp") + 2] = [_smp(spec)]
        argv[argv.index("-kernel"):argv.index("-kernel")] = _numa_argv(spec)
    if spec.arch == "arm64":
        argv[1:1] = ["-M", "virt"]
    else:
        argv[1:1] = ["-M", "pc"]
    return argv


def _check_numa(spec: VmSpec) -> None:
    if spec.numa_nodes < 1 or spec.cpus % spec.numa_nodes or spec.memory_mb % spec.numa_nodes:
        raise LabError(f"VM {spec.name}: {spec.cpus} vCPUs and {spec.memory_mb} MB do not split evenly "
                       f"over {spec.numa_nodes} NUMA nodes")


def _smp(spec: VmSpec) -> str:
    _check_numa(spec)
    return f"{spec.cpus},sockets={spec.numa_nodes},cores={spec.cpus // spec.numa_nodes},threads=1"


def _numa_argv(spec: VmSpec) -> list[str]:
    """One RAM backend and one node per socket: node n holds vCPUs n*k .. n*k+k-1."""
    _check_numa(spec)
    per_node, size = spec.cpus // spec.numa_nodes, spec.memory_mb // spec.numa_nodes
    argv = []
    for node in range(spec.numa_nodes):
        first = node * per_node
        cpus = str(first) if per_node == 1 else f"{first}-{first + per_node - 1}"
        argv += ["-object", f"memory-backend-ram,id=ram{node},size={size}M",
                 "-numa", f"node,nodeid={node},cpus={cpus},memdev=ram{node}"]
    return argv


def ssh_argv(record: VmRecord, user: str = "root") -> list[str]:
    return ["ssh", *SSH_OPTIONS, "-i", record.identity_file, "-p", str(record.ssh_port), f"{user}@{LOOPBACK}"]


def wait_ready(record: VmRecord, timeout: float) -> float:
    """Block until ssh answers (the forwarded port accepts before sshd is up); return seconds."""
    started = time.monotonic()
    while time.monotonic() - started < timeout:
        if running_pid(record.name) is None:
            raise LabError(f"VM {record.name}: qemu exited during boot; serial log: {record.serial_log}")
        try:
            probe = subprocess.run([*ssh_argv(record), "true"], capture_output=True, check=False, timeout=30)
        except subprocess.TimeoutExpired:
            continue  # sshd accepted but answered slowly (a loaded machine): still booting, ask again
        if probe.returncode == 0:
            return time.monotonic() - started
        time.sleep(2)
    raise LabError(f"VM {record.name}: no ssh after {timeout:.0f}s; serial log: {record.serial_log}")


def _launch(spec: VmSpec, log, pin_offset: int = 0) -> VmRecord:
    """Start qemu for spec on a fresh overlay (stopping a leftover VM of that name first); pinned
    with its host CPUs rotated by pin_offset, so VMs started together do not all start on CPU 0."""
    if spec.arch not in QEMU_BY_ARCH:
        raise LabError(f"unknown architecture {spec.arch!r}")
    if spec.boot not in boot_loader.KINDS or (spec.boot == "grub" and spec.arch != "amd64"):
        raise LabError(f"VM {spec.name}: boot {spec.boot!r}: the lab boots 'kernel' (qemu -kernel) on any "
                       f"architecture and 'grub' (the VM's own GRUB through SeaBIOS) on amd64 only")
    img = images.build(spec.arch, log=log)
    images.prune_stale(spec.arch, {r.image for r in list_running()}, log=log)
    vmdir = paths.vm_dir(spec.name)
    if stop(spec.name):
        log(f"lab: stopped a leftover VM {spec.name}")
    vmdir.mkdir(parents=True, exist_ok=True)
    for leftover in ("disk.qcow2", "serial.log", "qemu.pid", "vm.json"):
        (vmdir / leftover).unlink(missing_ok=True)
    subprocess.run(
        ["qemu-img", "create", "-q", "-f", "qcow2", "-F", "raw", "-b", str(img.disk), str(vmdir / "disk.qcow2")],
        check=True,
    )
    if spec.boot == "grub":
        boot_loader.create_boot_disk(vmdir)
    peer_addresses, guestfwds = peer_forwards(spec.peers)
    guestfwds += controller_forwards(spec.controller_ports)
    for attempt in range(1, PORT_ATTEMPTS + 1):
        ssh_port, *ports = _free_ports(1 + len(spec.forwards))
        forwarded = {str(guest): port for guest, port in zip(spec.forwards, ports)}
        record = VmRecord(
            name=spec.name, arch=spec.arch, cpus=spec.cpus, memory_mb=spec.memory_mb,
            cpu_model=spec.cpu_model or DEFAULT_CPU_MODEL[spec.arch], accel=spec.accel,
            ssh_port=ssh_port, forwarded=forwarded, identity_file=str(img.ssh_key),
            serial_log=str(vmdir / "serial.log"), image=str(img.directory), peer_addresses=peer_addresses,
            boot=spec.boot,
        )
        argv = _qemu_argv(spec, img, vmdir, ssh_port, forwarded, guestfwds)
        (vmdir / "qemu-argv.json").write_text(json.dumps(argv) + "\n", encoding="utf-8")
        try:
            _start_qemu(spec, record, argv, pin_offset, "qemu did not start")
            return record
        except LabError as error:
            if PORT_TAKEN not in str(error) or attempt == PORT_ATTEMPTS:
                raise
            log(f"lab: VM {spec.name}: a chosen port was taken before qemu bound it; new ports (try {attempt + 1})")
    raise AssertionError("unreachable")


def _start_qemu(spec: VmSpec, record: VmRecord, argv: list[str], pin_offset: int, failure: str) -> None:
    """Run qemu (it daemonizes), pin its threads when the spec asks, and keep the VM's record."""
    launch = subprocess.run(argv, capture_output=True, text=True, check=False)
    if launch.returncode != 0:
        raise LabError(f"VM {spec.name}: {failure}: {launch.stderr.strip()}")
    if spec.pin:
        record.pinning = _pin(spec.name, pin_offset)
    (paths.vm_dir(spec.name) / "vm.json").write_text(json.dumps(asdict(record), indent=2) + "\n", encoding="utf-8")


def _pin(name: str, offset: int = 0) -> dict[str, list[int]]:
    """vCPU n on host CPU n + offset (mod the CPUs this process may use), qemu's other threads on the
    host CPU of vCPU 0, which mirrors the guest's housekeeping CPU."""
    pid = running_pid(name)
    if pid is None:
        raise LabError(f"VM {name}: qemu is not running, nothing to pin")
    host_cpus = threads.rotated(sorted(os.sched_getaffinity(0)), offset)
    return threads.apply(threads.pinning_plan(threads.threads(pid), host_cpus, host_cpus[:1]))


def _restart_from_boot_disk(spec: VmSpec, record: VmRecord, timeout: float, log, pin_offset: int) -> None:
    """Make the VM's second disk its boot disk (GRUB), power it off and start qemu again booting that disk,
    on the same ports."""
    script = boot_loader.install_script(" ".join(t for t in _kernel_append(spec).split()
                                                 if not t.startswith("root=") and t != "quiet"))
    install = subprocess.run([*ssh_argv(record), "sh", "-s"], input=script, capture_output=True, text=True,
                             check=False, timeout=600)
    if install.returncode != 0:
        raise LabError(f"VM {spec.name}: installing GRUB failed: {(install.stderr or install.stdout).strip()[-800:]}")
    subprocess.run([*ssh_argv(record), "systemctl", "poweroff"], capture_output=True, check=False, timeout=60)
    deadline = time.monotonic() + 120
    while running_pid(spec.name) is not None and time.monotonic() < deadline:
        time.sleep(1)
    stop(spec.name)
    vmdir = paths.vm_dir(spec.name)
    argv = boot_loader.booting_from_disk(json.loads((vmdir / "qemu-argv.json").read_text(encoding="utf-8")))
    (vmdir / "qemu.pid").unlink(missing_ok=True)
    _start_qemu(spec, record, argv, pin_offset, "qemu did not start from its boot disk")
    seconds = wait_ready(record, timeout)
    log(f"lab: {spec.name} booted through its own GRUB after {seconds:.1f}s")


def start_many(specs: list[VmSpec], boot_timeout: float = 300.0, log=print) -> list[VmRecord]:
    """Launch every VM first, then wait for each: boots overlap instead of queueing."""
    ordered = boot_order(specs)
    records = [_launch(spec, log, pin_offset=index) for index, spec in enumerate(ordered)]
    started = time.monotonic()
    for index, (spec, record) in enumerate(zip(ordered, records)):
        remaining = max(boot_timeout - (time.monotonic() - started), 1.0)
        wait_ready(record, remaining)
        if spec.boot == "grub":
            _restart_from_boot_disk(spec, record, boot_timeout, log, index)
        seconds = time.monotonic() - started
        log(f"lab: {record.name} ({record.arch}, {record.accel}) ssh on {LOOPBACK}:{record.ssh_port} after {seconds:.1f}s")
        (paths.vm_dir(record.name) / "boot-seconds").write_text(f"{seconds:.1f}\n", encoding="ascii")
    return records


def start(spec: VmSpec, boot_timeout: float = 300.0, log=print) -> VmRecord:
    return start_many([spec], boot_timeout, log)[0]
