"""Lab VMs that boot through a boot loader of their own (spec boot="grub", amd64): what a host's boot
loader is told (the kernel command line) then takes effect at the VM's next reboot, as on a real host.

Every lab VM starts as qemu -kernel (no boot loader: its command line is fixed by qemu). A grub VM also
gets a small second disk; over ssh the guest partitions it, mounts it at /boot/grub, writes
/etc/default/grub (the lab's console, hostname and machine id, no menu) and runs grub-install and
update-grub, as Debian's installer would. Then qemu starts again without -kernel, booting that disk:
SeaBIOS -> GRUB (MBR of vdb) -> the root disk's kernel with grub.cfg's command line. The first start
stays direct because the base image is a whole-disk filesystem that GRUB cannot embed itself in."""

import shlex
import subprocess
from pathlib import Path

BOOT_DISK = "boot.qcow2"
BOOT_DISK_SIZE = "64M"
KINDS = ("kernel", "grub")


def create_boot_disk(vmdir: Path) -> Path:
    disk = vmdir / BOOT_DISK
    disk.unlink(missing_ok=True)
    subprocess.run(["qemu-img", "create", "-q", "-f", "qcow2", str(disk), BOOT_DISK_SIZE], check=True)
    return disk


BOOT_DEVICE = "virtio-blk-pci,drive=boot0"


def boot_drive_options(disk: Path) -> list[str]:
    return ["-drive", f"file={disk},format=qcow2,if=none,id=boot0,cache=unsafe", "-device", BOOT_DEVICE]


def booting_from_disk(argv: list[str]) -> list[str]:
    """qemu's argv of the first start without -kernel, -initrd and -append, the boot disk first in the
    firmware's boot order: SeaBIOS boots GRUB from it."""
    if BOOT_DEVICE not in argv:
        raise ValueError("no boot disk in this VM's qemu command line")
    kept, skip = [], False
    for item in argv:
        if skip:
            skip = False
            continue
        if item in ("-kernel", "-initrd", "-append"):
            skip = True
            continue
        kept.append(BOOT_DEVICE + ",bootindex=0" if item == BOOT_DEVICE else item)
    return kept


def default_grub(cmdline: str) -> str:
    """/etc/default/grub of a lab VM: the command line qemu -append gave it (console, hostname, machine id)
    for every entry, no menu and no wait."""
    return "\n".join([
        "# Written by the lab (cpuinfer_lab.boot_loader): a VM booting through its own GRUB.",
        "GRUB_DEFAULT=0",
        "GRUB_TIMEOUT=0",
        "GRUB_TIMEOUT_STYLE=hidden",
        "GRUB_DISTRIBUTOR=Debian",
        'GRUB_CMDLINE_LINUX_DEFAULT="quiet"',
        f'GRUB_CMDLINE_LINUX="{cmdline}"',
        "GRUB_TERMINAL=console",
        "GRUB_DISABLE_OS_PROBER=true",
        "GRUB_DISABLE_RECOVERY=true",
        "",
    ])


def install_script(cmdline: str, device: str = "/dev/vdb") -> str:
    """The shell script the guest runs as root to make device its boot disk."""
    return "\n".join([
        "set -eu",
        f"printf 'label: dos\\nstart=2048, type=83\\n' | sfdisk -q {device}",
        f"mkfs.ext2 -q -F -L lab-boot {device}1",
        "mkdir -p /boot/grub /etc/default/grub.d",
        "grep -q '^LABEL=lab-boot ' /etc/fstab 2>/dev/null || echo 'LABEL=lab-boot /boot/grub ext2 defaults 0 2' >> /etc/fstab",
        f"mount {device}1 /boot/grub",
        f"printf '%s' {shlex.quote(default_grub(cmdline))} > /etc/default/grub",
        f"grub-install --target=i386-pc {device}",
        "update-grub",
        "sync",
        "",
    ])
