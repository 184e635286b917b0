"""files/make_gguf_model.py: the sums the inventories and scenarios pin are what it makes, and its
tokenizer can spell what grammar-constrained output (JSON mode, tool calls) needs.

A pinned sum that the generator no longer makes fails only on a VM otherwise (the role's model check),
minutes into a converge."""

import hashlib
import json
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


def test_the_deepseek_benchmark_model_has_deepseek_v2_lites_shape():
    """issue 39: MLA with V2-Lite's attention sizes, 64 routed experts with 6 active, 2 shared; the model's own
    widths multiples of 256 (Q4_K_M's K-quants take every matrix but attn_k_b, whose 128-wide rows are
    DeepSeek's no-RoPE head size); weights several times a 32 MiB L3 at 4.5 bits a weight."""
    sys.path.insert(0, str(GENERATOR.parent))
    import make_gguf_model  # noqa: E402 pylint: disable=import-outside-toplevel

    spec = make_gguf_model.SIZES["deepseek2-lite-bench"]
    assert (spec["arch"], spec["experts"], spec["experts_used"], spec["shared"]) == ("deepseek2", 64, 6, 2)
    assert (spec["kv_lora"], spec["rope"], spec["nope"], spec["v_head"]) == (512, 64, 128, 128)
    assert all(spec[key] % 256 == 0 for key in ("embd", "ff", "ff_exp", "q_lora", "kv_lora"))
    experts = spec["experts"] * 3 * spec["ff_exp"] * spec["embd"] * (spec["layers"] - spec["dense"])
    assert experts * 4.5 / 8 > 4 * 32 * 2 ** 20


def test_a_token_reads_the_active_experts_share_of_a_moe_model(tmp_path):
    """check_gguf.py's bytes_per_token, the denominator of the decode bound calibrations report."""
    path = tmp_path / "deepseek2-tiny.gguf"
    subprocess.run([sys.executable, str(GENERATOR), "deepseek2-tiny", str(path)], check=True, capture_output=True)
    digest = hashlib.sha256(path.read_bytes()).hexdigest()
    checker = REPO / "roles" / "llama_server" / "files" / "check_gguf.py"
    meta = json.loads(subprocess.run([sys.executable, str(checker), str(path), digest], check=True,
                                     capture_output=True, text=True).stdout)
    reader = gguf.GGUFReader(str(path))
    experts = sum(int(t.n_bytes) for t in reader.tensors if "_exps." in t.name)
    embedding = next(int(t.n_bytes) for t in reader.tensors if t.name == "token_embd.weight")
    dense = sum(int(t.n_bytes) for t in reader.tensors) - experts - embedding
    # deepseek2-tiny routes each token to 2 of 4 experts and reads one row of a 512-token embedding
    assert meta["bytes_per_token"] == dense + experts * 2 // 4 + embedding // 512
    assert meta["bytes_per_token"] < meta["bytes"]
