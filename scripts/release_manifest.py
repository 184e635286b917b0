"""What a release shipped, so that a later change to it cannot land without a changelog fragment.

changelogs/released-files.json holds the version galaxy.yml had at the last release and the sha256 of every
file users run (SHIPPED below) as it was then. `--write` records it (scripts/release does, after the
changelog release); tests/unit/test_collection_release.py compares the tree against it.

Usage: python scripts/release_manifest.py [--write]   (without --write: print what changed since the release)
"""

import hashlib
import json
import subprocess
import sys
from pathlib import Path

import yaml

REPO = Path(__file__).resolve().parents[1]
MANIFEST = REPO / "changelogs" / "released-files.json"
FRAGMENTS = REPO / "changelogs" / "fragments"
# What users run: a change here is a change a user of the collection may meet.
SHIPPED = ("galaxy.yml", "meta/", "plugins/", "roles/", "playbooks/", "agent/", "files/", "inventories/example/")


def shipped_files(repo=REPO):
    listed = subprocess.run(["git", "ls-files", "--cached", "--others", "--exclude-standard", "--", *SHIPPED], cwd=repo,
                            capture_output=True, text=True, check=True).stdout.splitlines()
    # generated from the specs (and their version line from galaxy.yml): the spec is what counts
    return sorted(name for name in listed if (repo / name).is_file() and not name.endswith("README.md"))


def digests(repo=REPO):
    return {name: hashlib.sha256((repo / name).read_bytes()).hexdigest() for name in shipped_files(repo)}


def galaxy_version(repo=REPO):
    return yaml.safe_load((repo / "galaxy.yml").read_text(encoding="utf-8"))["version"]


def changed_since_release(manifest, now):
    """Shipped files added, removed or changed since the release the manifest records."""
    released = manifest["files"]
    return sorted(set(released) ^ set(now) | {name for name in set(released) & set(now) if released[name] != now[name]})


def fragments(directory=FRAGMENTS):
    return sorted(path.name for path in directory.glob("*.y*ml")) if directory.exists() else []


def unrecorded_change(manifest, now, fragment_names):
    """The refusal for shipped files changed with no changelog fragment, or None."""
    changed = changed_since_release(manifest, now)
    if not changed or fragment_names:
        return None
    return ("%d shipped file(s) changed since release %s with no changelog fragment in changelogs/fragments/ "
            "(a minor_changes, bugfixes, ... entry; 'trivial' for a change users do not see): %s" % (
                len(changed), manifest["version"], ", ".join(changed[:12]) + (" ..." if len(changed) > 12 else "")))


def main():
    if sys.argv[1:] == ["--write"]:
        MANIFEST.write_text(json.dumps({"version": galaxy_version(), "files": digests()}, indent=1, sort_keys=True) + "\n",
                            encoding="utf-8")
        return 0
    manifest = json.loads(MANIFEST.read_text(encoding="utf-8"))
    for name in changed_since_release(manifest, digests()):
        print(name)
    return 0


if __name__ == "__main__":
    sys.exit(main())
