# Copyright: cpuinfer.llm contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Write each role's README.md from its meta/argument_specs.yml, the single source of truth, with aar-doc.

Usage: python scripts/role_docs.py [--check]   (--check: exit 1 when a README differs from what would be written)
"""

import subprocess
import sys
import tempfile
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
AAR_DOC = Path(sys.executable).with_name("aar-doc")
# aar-doc's markdown, with an example play that is valid YAML in place of its own
TEMPLATE = REPO / "scripts" / "role_readme.md.j2"


def roles():
    return sorted(p for p in (REPO / "roles").iterdir() if (p / "meta" / "argument_specs.yml").exists())


def render(role, output):
    """aar-doc's markdown of one role into output; its text."""
    subprocess.run([str(AAR_DOC), "--output-mode", "replace", "--output-file", str(output),
                    "--output-template", str(TEMPLATE), str(role), "markdown"],
                   check=True, capture_output=True, text=True)
    return Path(output).read_text(encoding="utf-8")


def main():
    check = "--check" in sys.argv[1:]
    stale = []
    with tempfile.TemporaryDirectory(prefix="role-docs-") as scratch:
        for role in roles():
            text = render(role, Path(scratch) / (role.name + ".md"))
            readme = role / "README.md"
            if not readme.exists() or readme.read_text(encoding="utf-8") != text:
                stale.append(str(readme.relative_to(REPO)))
                if not check:
                    readme.write_text(text, encoding="utf-8")
    if check and stale:
        sys.stderr.write("out of date (run scripts/role_docs.py): %s\n" % ", ".join(stale))
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
