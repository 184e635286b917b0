"""Before any work: every command the controller runs is there, or the lab says which package brings it.

requirements/debian-packages.txt is the one list (scripts/bootstrap installs from it); this reads
the same file, so a package added there is checked here without another edit.
"""

import shutil
from pathlib import Path

PACKAGE_LIST = Path(__file__).resolve().parents[2] / "requirements" / "debian-packages.txt"
DPKG_INFO = Path("/var/lib/dpkg/info")


def requirements(path=PACKAGE_LIST):
    """[(package, [commands])] in the file's order; '-' means the package gives no command we run."""
    found = []
    for line in path.read_text(encoding="utf-8").splitlines():
        fields = line.split("#", 1)[0].split()
        if fields:
            found.append((fields[0], [] if fields[1:] == ["-"] else fields[1:]))
    return found


def _installed(package, dpkg_info):
    return any((dpkg_info / name).exists() for name in (package + ".list", package + ":amd64.list", package + ":arm64.list"))


def missing(path=PACKAGE_LIST, which=shutil.which, dpkg_info=DPKG_INFO):
    """['command (package)' or 'package'] for everything absent, in the file's order."""
    absent = []
    for package, commands in requirements(path):
        if commands:
            absent += ["%s (Debian package %s)" % (command, package) for command in commands if which(command) is None]
        elif not _installed(package, dpkg_info):
            absent.append("Debian package %s" % package)
    return absent


def check(log):
    """True when nothing is missing; else logs every missing piece and the one command that fixes it."""
    absent = missing()
    if absent:
        log("lab: this machine lacks: " + "; ".join(absent))
        log("lab: scripts/bootstrap installs all of them (as root); nothing was started")
    return not absent
