"""The collection's metadata tells one story: galaxy.yml's version is the changelog's latest release, and a
change to what users run since that release comes with a changelog fragment (scripts/release cuts one)."""

import json
import re
import subprocess
import sys
from pathlib import Path

import yaml

REPO = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(REPO / "scripts"))

import release_manifest  # noqa: E402


def _version_key(version):
    return tuple(int(part) for part in re.findall(r"\d+", version))


def test_galaxy_version_is_the_latest_release_of_the_changelog_and_of_the_record():
    version = release_manifest.galaxy_version()
    releases = yaml.safe_load((REPO / "changelogs" / "changelog.yaml").read_text(encoding="utf-8"))["releases"]
    assert max(releases, key=_version_key) == version
    assert json.loads(release_manifest.MANIFEST.read_text(encoding="utf-8"))["version"] == version
    assert "\nv%s\n%s\n" % (version, "=" * len("v" + version)) in (REPO / "CHANGELOG.rst").read_text(encoding="utf-8")


def test_the_ansible_core_the_collection_is_tested_with_meets_its_runtime_floor():
    floor = yaml.safe_load((REPO / "meta" / "runtime.yml").read_text(encoding="utf-8"))["requires_ansible"]
    pinned = re.search(r"^ansible-core==(\S+)$", (REPO / "requirements" / "constraints.txt").read_text(), re.M).group(1)
    assert floor.startswith(">=") and _version_key(pinned) >= _version_key(floor[2:])


def test_a_shipped_change_since_the_release_has_a_fragment():
    manifest = json.loads(release_manifest.MANIFEST.read_text(encoding="utf-8"))
    assert release_manifest.unrecorded_change(manifest, release_manifest.digests(), release_manifest.fragments()) is None


def test_a_change_without_a_fragment_is_refused_by_name():
    manifest = {"version": "1.0.0", "files": {"plugins/modules/thp.py": "a", "roles/x/tasks/main.yml": "b"}}
    now = {"plugins/modules/thp.py": "changed", "roles/x/tasks/main.yml": "b", "playbooks/new.yml": "c"}
    message = release_manifest.unrecorded_change(manifest, now, [])
    assert message.startswith("2 shipped file(s) changed since release 1.0.0 with no changelog fragment")
    assert message.endswith("playbooks/new.yml, plugins/modules/thp.py")
    assert release_manifest.unrecorded_change(manifest, now, ["fix.yml"]) is None
    assert release_manifest.unrecorded_change(manifest, dict(manifest["files"]), []) is None


def test_the_fragments_and_the_changelog_are_valid():
    tool = str(Path(sys.executable).with_name("antsibull-changelog"))
    for argv in ([tool, "lint"], [tool, "lint-changelog-yaml", "changelogs/changelog.yaml"]):
        lint = subprocess.run(argv, cwd=REPO, capture_output=True, text=True, check=False)
        assert lint.returncode == 0 and not lint.stdout.strip(), lint.stdout + lint.stderr
