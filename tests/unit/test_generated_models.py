"""files/make_gguf_model.py: the sums the inventories and scenarios pin are what it makes, and its
tokenizer can spell what grammar-constrained output (JSON mode, tool calls) needs.

A pinned sum that the generator no longer makes fails only on a VM otherwise (the role's model check),
minutes into a converge."""

import hashlib
import re
import subprocess
import sys
from pathlib import Path

import gguf
import pytest

REPO = Path(__file__).resolve().parents[2]
GENERATOR = REPO / "files" / "make_gguf_model.py"
PINNING_TREES = ("inventories", "molecule", "benchmarks", "lab")
# "model: .../llama-tiny.gguf" followed (within an entry) by "model_sha256: <sum>"
PINNED = re.compile(r"model: [^\n]*?/(?P<name>[a-z0-9-]+)\.gguf\"?\n(?:[^\n]*\n){0,3}?\s*model_sha256: (?P<sum>[0-9a-f]{64})")


def pinned_sums():
    found = []
    for tree in PINNING_TREES:
        for path in sorted((REPO / tree).rglob("*.yml")):
            for match in PINNED.finditer(path.read_text(encoding="utf-8")):
                found.append((str(path.relative_to(REPO)), match.group("name"), match.group("sum")))
    return found


@pytest.fixture(scope="module")
def generated(tmp_path_factory):
    directory = tmp_path_factory.mktemp("models")
    made = {}
    for name in sorted({name for dummy, name, dummy_sum in pinned_sums()}):
        path = directory / ("%s.gguf" % name)
        subprocess.run([sys.executable, str(GENERATOR), name, str(path)], check=True, capture_output=True)
        made[name] = path
    return made


def test_the_pins_are_found():
    names = {name for dummy, name, dummy_sum in pinned_sums()}
    assert {"llama-tiny", "llama-bench", "deepseek2-tiny"} <= names, names


@pytest.mark.parametrize("where, name, pinned", pinned_sums(), ids=lambda value: str(value)[:40])
def test_every_pinned_sum_is_what_the_generator_makes(generated, where, name, pinned):
    made = hashlib.sha256(generated[name].read_bytes()).hexdigest()
    assert made == pinned, "%s pins %s of %s; files/make_gguf_model.py makes %s" % (where, pinned, name, made)


def _metadata(path):
    reader = gguf.GGUFReader(str(path))
    fields = reader.fields

    def value(key):
        field = fields[key]
        return field.parts[field.data[0]].tolist()
    tokens = [bytes(fields["tokenizer.ggml.tokens"].parts[index]).decode("utf-8")
              for index in fields["tokenizer.ggml.tokens"].data]
    return value, tokens


def test_no_space_before_the_text_after_a_special_token(generated):
    """With one, "<|im_start|>assistant" tokenizes as "<|im_start|> assistant" and llama-server refuses JSON
    mode (its grammar starts with the generation prompt): 400 "Failed to initialize samplers"."""
    value, dummy = _metadata(generated["llama-tiny"])
    assert value("tokenizer.ggml.add_space_prefix") == [False]


@pytest.mark.parametrize("piece", list('{}[]":,.-_0123456789') + ["\u2581", "\n"])
def test_json_punctuation_has_pieces_of_its_own(generated, piece):
    dummy, tokens = _metadata(generated["llama-tiny"])
    assert piece in tokens
    assert len(tokens) == len(set(tokens)), "a piece listed twice"
