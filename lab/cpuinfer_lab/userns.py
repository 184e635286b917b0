"""Run a command as root of a private user namespace, mapped to unprivileged host ids.

The image build runs package maintainer scripts; inside this namespace they cannot write the
host's /proc/sys or device nodes, which plain `mmdebstrap --mode=unshare` as real root allows.
"""

import ctypes
import os
from pathlib import Path

CLONE_NEWNS = 0x00020000
CLONE_NEWUSER = 0x10000000
MS_REC = 0x4000
MS_PRIVATE = 1 << 18

HOST_ID_BASE = 100000
ID_COUNT = 65536

# binfmt_misc entry for aarch64 ELF executables, as Debian's qemu-user-static registers it.
AARCH64_MAGIC = r"\x7fELF\x02\x01\x01\x00\x00\x00\x00\x00\x00\x00\x00\x00\x02\x00\xb7\x00"
AARCH64_MASK = r"\xff\xff\xff\xff\xff\xff\xff\x00\xff\xff\xff\xff\xff\xff\xff\xff\xfe\xff\xff\xff"

_libc = ctypes.CDLL(None, use_errno=True)


def _check(result: int, what: str) -> None:
    if result != 0:
        err = ctypes.get_errno()
        raise OSError(err, f"{what}: {os.strerror(err)}")


def _register_private_aarch64(interpreter: Path) -> None:
    """Mount a binfmt_misc instance owned by this namespace (Linux >= 6.7) and register qemu.

    The F flag opens the interpreter now, so nested namespaces and chroots find it; nothing is
    registered on the host.
    """
    mountpoint = b"/proc/sys/fs/binfmt_misc"
    _check(_libc.mount(b"none", b"/", None, MS_REC | MS_PRIVATE, None), "make mounts private")
    _check(_libc.mount(b"binfmt_misc", mountpoint, b"binfmt_misc", 0, None), "mount binfmt_misc")
    entry = f":qemu-aarch64:M::{AARCH64_MAGIC}:{AARCH64_MASK}:{interpreter}:F".encode()
    # bytes, not text: namespace root may not read the interpreter's lazily loaded codecs
    fd = os.open("/proc/sys/fs/binfmt_misc/register", os.O_WRONLY)
    try:
        os.write(fd, entry)
    finally:
        os.close(fd)


def run_as_namespace_root(argv: list[str], env: dict[str, str], aarch64_interpreter: Path | None = None) -> int:
    """Fork, move the child into new user+mount namespaces, map ids, exec argv; return its exit code."""
    ready_read, ready_write = os.pipe()
    mapped_read, mapped_write = os.pipe()
    pid = os.fork()
    if pid == 0:  # child
        try:
            os.close(ready_read)
            os.close(mapped_write)
            _check(_libc.unshare(CLONE_NEWUSER | CLONE_NEWNS), "unshare")
            os.write(ready_write, b"1")
            if os.read(mapped_read, 1) != b"1":
                os._exit(97)
            os.setresgid(0, 0, 0)
            os.setresuid(0, 0, 0)
            if aarch64_interpreter is not None:
                _register_private_aarch64(aarch64_interpreter)
            os.execvpe(argv[0], argv, env)
        except BaseException as exc:  # pylint: disable=broad-except
            os.write(2, f"user namespace setup failed: {exc}\n".encode())
        os._exit(98)
    os.close(ready_write)
    os.close(mapped_read)
    try:
        if os.read(ready_read, 1) != b"1":
            raise OSError("the namespace child died before unsharing")
        for name in ("uid_map", "gid_map"):
            Path(f"/proc/{pid}/{name}").write_text(f"0 {HOST_ID_BASE} {ID_COUNT}\n", encoding="ascii")
        os.write(mapped_write, b"1")
    finally:
        os.close(mapped_write)
        os.close(ready_read)
    return os.waitstatus_to_exitcode(os.waitpid(pid, 0)[1])
