# Copyright: cpuinfer.llm contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Check a GGUF file on the controller before any host sees it: llama.cpp aborts the whole server
process on a malformed file, so a bad model is caught here with a message instead of a crash loop.

Prints JSON {"sha256", "architecture", "tensors", "bytes", "layers", "head_count", "head_count_kv",
"key_length", "value_length", "context_length"} (the shape the KV cache and so the memory limits
follow from) and "bytes_per_token" (weights one decoded token reads: the bound memory bandwidth puts on
decode, reported beside calibrations); exits 1 with a reason when the file is not a readable GGUF or its sha256 differs.
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
        architecture = reader.fields["general.architecture"].contents()
        shape = attention_shape(reader, architecture)
    except (KeyError, ValueError, IndexError, TypeError) as exc:
        sys.stderr.write("%s is not a usable GGUF model: %s\n" % (path, exc))
        return 1
    print(json.dumps(dict(shape, sha256=expected, architecture=architecture, tensors=len(reader.tensors),
                          bytes=os.path.getsize(path), bytes_per_token=bytes_per_token(reader, architecture))))
    return 0


def attention_shape(reader, architecture):
    """Layers, heads and head sizes as llama.cpp reads them, with its defaults for absent keys."""
    def value(key, default=None):
        field = reader.fields.get("%s.%s" % (architecture, key))
        if field is None:
            if default is None:
                raise KeyError("%s.%s" % (architecture, key))
            return default
        return int(field.contents())

    heads = value("attention.head_count")
    head_size = value("embedding_length") // heads
    return {"layers": value("block_count"), "head_count": heads, "head_count_kv": value("attention.head_count_kv", heads),
            "key_length": value("attention.key_length", head_size), "value_length": value("attention.value_length", head_size),
            "context_length": value("context_length")}


def bytes_per_token(reader, architecture):
    """Every weight matrix once, a routed expert matrix at its share (experts used / experts), the
    token embedding's one row: what decoding one token reads from memory."""
    def value(key):
        field = reader.fields.get("%s.%s" % (architecture, key))
        return int(field.contents()) if field is not None else 0

    used, experts = value("expert_used_count"), value("expert_count")
    total = 0
    for tensor in reader.tensors:
        size = int(tensor.n_bytes)
        if tensor.name == "token_embd.weight":
            size //= max(int(tensor.shape[-1]), 1)
        elif "_exps." in tensor.name and experts:
            size = size * used // experts
        total += size
    return total


if __name__ == "__main__":
    sys.exit(main())
