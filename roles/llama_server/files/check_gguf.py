# Copyright: cpuinfer.llm contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Check a GGUF file on the controller before any host sees it: llama.cpp aborts the whole server
process on a malformed file, so a bad model is caught here with a message instead of a crash loop.

Prints JSON {"sha256", "architecture", "tensors", "bytes"}; exits 1 with a reason when the file
is not a readable GGUF or its sha256 differs from the expected one.
"""

import hashlib
import json
import os
import sys

import gguf


def main():
    path, expected = sys.argv[1], sys.argv[2].lower()
    digest = hashlib.sha256()
    with open(path, "rb") as handle:
        for block in iter(lambda: handle.read(1 << 20), b""):
            digest.update(block)
    if digest.hexdigest() != expected:
        sys.stderr.write("%s: sha256 %s does not match the expected %s\n" % (path, digest.hexdigest(), expected))
        return 1
    try:
        reader = gguf.GGUFReader(path)
        field = reader.fields["general.architecture"]
        architecture = bytes(field.parts[field.data[0]]).decode()
    except (KeyError, ValueError, IndexError) as exc:
        sys.stderr.write("%s is not a usable GGUF model: %s\n" % (path, exc))
        return 1
    print(json.dumps({"sha256": expected, "architecture": architecture, "tensors": len(reader.tensors),
                      "bytes": os.path.getsize(path)}))
    return 0


if __name__ == "__main__":
    sys.exit(main())
