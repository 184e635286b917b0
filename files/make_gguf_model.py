# Copyright: cpuinfer.llm contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Write deterministic random-weight GGUF models (no weights can be downloaded here).

Sizes: llama-tiny (functional tests; milliseconds per token natively), llama-bench (lab
benchmarks), llama-250m (benchmarks on
real CPUs), deepseek2-tiny (MLA + MoE, the DeepSeek-V2 architecture), deepseek2-lite-bench
(DeepSeek-V2-Lite's shape scaled to ~320M parameters: engine benchmarks). The same name and seed
always give the same bytes, so a sha256 can be pinned. Optionally quantised with llama.cpp
(Q8_0, Q4_0, Q4_K_M) when llama_cpp is importable.

Usage: make_gguf_model.py NAME OUTPUT.gguf [--quantize Q8_0] [--seed N]
"""

import argparse
import hashlib
import os
import sys

import gguf
import numpy as np

SPECIAL = ["<unk>", "<s>", "</s>", "<|im_start|>", "<|im_end|>"]
WORDS = ("the of and to in is that for it as was with on be by this are at from or an have not "
         "model token cache memory core thread socket node latency throughput inference server "
         "request reply cpu group limit weight quota policy page huge fast slow steady").split()
# JSON's and tool calls' punctuation as pieces of their own, so grammar-constrained output (JSON mode,
# tool-call templates) is spelled in pieces as well as in byte tokens.
PUNCTUATION = list('{}[]":,.-_0123456789') + ["\u2581", "\n"]
CHATML = ("{% for message in messages %}{{'<|im_start|>' + message['role'] + '\\n' + message['content'] + "
          "'<|im_end|>' + '\\n'}}{% endfor %}{% if add_generation_prompt %}{{ '<|im_start|>assistant\\n' }}{% endif %}")

SIZES = {
    "llama-tiny": dict(arch="llama", vocab=512, embd=64, layers=2, heads=4, heads_kv=2, ff=128, ctx=1024),
    # ~1.4M parameters: 20+ ms a token in a software-emulated lab VM (the isolation benchmark)
    "llama-bench": dict(arch="llama", vocab=2048, embd=128, layers=4, heads=4, heads_kv=4, ff=384, ctx=1024),
    "llama-250m": dict(arch="llama", vocab=32000, embd=1024, layers=16, heads=16, heads_kv=16, ff=2816, ctx=2048),
    "deepseek2-tiny": dict(arch="deepseek2", vocab=512, embd=64, layers=3, heads=4, ff=128, ctx=1024, q_lora=32,
                           kv_lora=32, nope=16, rope=8, v_head=16, experts=4, experts_used=2, shared=1, ff_exp=32,
                           dense=1),
    # DeepSeek-V2-Lite's shape (MLA with its attention sizes, 64 routed experts with 6 active, 2 shared, one
    # leading dense block) scaled down: ~320M parameters, ~340 MB at Q8_0 and ~190 MB at Q4_K_M, so
    # several times a server's L3; rows are multiples of 256 so Q4_K_M quantises the matrices as K-quants,
    # except attn_k_b's 128 (the no-RoPE head size, DeepSeek's own), which fall back to Q5_0 as DeepSeek's do.
    "deepseek2-lite-bench": dict(arch="deepseek2", vocab=8192, embd=1024, layers=6, heads=8, ff=2816, ctx=4096,
                                 q_lora=256, kv_lora=512, nope=128, rope=64, v_head=128, experts=64, experts_used=6,
                                 shared=2, ff_exp=256, dense=1),
}


def vocabulary(size):
    """SentencePiece-style: specials, 256 byte tokens (any text tokenizes), then unique pieces: words,
    letters, punctuation."""
    tokens = list(SPECIAL) + ["<0x%02X>" % b for b in range(256)]
    types = [gguf.TokenType.UNKNOWN] + [gguf.TokenType.CONTROL] * 4 + [gguf.TokenType.BYTE] * 256
    pieces = ["\u2581" + w for w in WORDS] + list("abcdefghijklmnopqrstuvwxyz") + PUNCTUATION
    n = 0
    while len(tokens) < size:
        piece = pieces[n] if n < len(pieces) else "\u2581w%d" % n
        tokens.append(piece)
        types.append(gguf.TokenType.NORMAL)
        n += 1
    scores = [0.0] * (len(SPECIAL) + 256) + [-float(i) for i in range(len(tokens) - len(SPECIAL) - 256)]
    return tokens, scores, types


class Weights:
    def __init__(self, seed):
        self.rng = np.random.RandomState(seed)

    def matrix(self, *shape):
        return (self.rng.standard_normal(shape) * 0.02).astype(np.float16)

    @staticmethod
    def norm(n):
        return np.ones(n, dtype=np.float32)


def write_tokenizer(writer, spec):
    tokens, scores, types = vocabulary(spec["vocab"])
    writer.add_tokenizer_model("llama")
    writer.add_token_list(tokens)
    writer.add_token_scores(scores)
    writer.add_token_types(types)
    writer.add_bos_token_id(1)
    writer.add_eos_token_id(2)
    writer.add_unk_token_id(0)
    writer.add_add_bos_token(True)
    writer.add_add_eos_token(False)
    # As the ChatML models' tokenizers: no space before the text after a special token. With one, the
    # generation prompt "<|im_start|>assistant\n" tokenizes as "<|im_start|> assistant", which the grammar of
    # JSON mode (it starts with the literal prompt) refuses: llama-server answered 400 "Failed to
    # initialize samplers".
    writer.add_add_space_prefix(False)
    writer.add_chat_template(CHATML)


def llama_tensors(writer, spec, w):
    embd, ff, head_dim = spec["embd"], spec["ff"], spec["embd"] // spec["heads"]
    kv = head_dim * spec["heads_kv"]
    writer.add_head_count_kv(spec["heads_kv"])
    writer.add_rope_dimension_count(head_dim)
    writer.add_tensor("token_embd.weight", w.matrix(spec["vocab"], embd))
    for i in range(spec["layers"]):
        for name, tensor in (("attn_norm", w.norm(embd)), ("attn_q", w.matrix(embd, embd)), ("attn_k", w.matrix(kv, embd)),
                             ("attn_v", w.matrix(kv, embd)), ("attn_output", w.matrix(embd, embd)),
                             ("ffn_norm", w.norm(embd)), ("ffn_gate", w.matrix(ff, embd)), ("ffn_up", w.matrix(ff, embd)),
                             ("ffn_down", w.matrix(embd, ff))):
            writer.add_tensor("blk.%d.%s.weight" % (i, name), tensor)


def deepseek2_tensors(writer, spec, w):
    embd, heads, ff, ff_exp = spec["embd"], spec["heads"], spec["ff"], spec["ff_exp"]
    q_lora, kv_lora, nope, rope, v_head = spec["q_lora"], spec["kv_lora"], spec["nope"], spec["rope"], spec["v_head"]
    writer.add_head_count_kv(1)
    writer.add_key_length(kv_lora + rope)
    writer.add_value_length(kv_lora)
    writer.add_key_length_mla(nope + rope)
    writer.add_value_length_mla(v_head)
    writer.add_rope_dimension_count(rope)
    writer.add_q_lora_rank(q_lora)
    writer.add_kv_lora_rank(kv_lora)
    writer.add_leading_dense_block_count(spec["dense"])
    writer.add_expert_feed_forward_length(ff_exp)
    writer.add_expert_count(spec["experts"])
    writer.add_expert_used_count(spec["experts_used"])
    writer.add_expert_shared_count(spec["shared"])
    writer.add_expert_weights_scale(1.0)
    writer.add_expert_gating_func(gguf.ExpertGatingFuncType.SOFTMAX)
    writer.add_tensor("token_embd.weight", w.matrix(spec["vocab"], embd))
    for i in range(spec["layers"]):
        tensors = [
            ("attn_norm", w.norm(embd)), ("attn_q_a", w.matrix(q_lora, embd)), ("attn_q_a_norm", w.norm(q_lora)),
            ("attn_q_b", w.matrix(heads * (nope + rope), q_lora)), ("attn_kv_a_mqa", w.matrix(kv_lora + rope, embd)),
            ("attn_kv_a_norm", w.norm(kv_lora)), ("attn_k_b", w.matrix(heads, kv_lora, nope)),
            ("attn_v_b", w.matrix(heads, v_head, kv_lora)), ("attn_output", w.matrix(embd, heads * v_head)),
            ("ffn_norm", w.norm(embd)),
        ]
        if i < spec["dense"]:
            tensors += [("ffn_gate", w.matrix(ff, embd)), ("ffn_up", w.matrix(ff, embd)), ("ffn_down", w.matrix(embd, ff))]
        else:
            shared = ff_exp * spec["shared"]
            tensors += [
                ("ffn_gate_inp", w.matrix(spec["experts"], embd).astype(np.float32)),
                ("ffn_gate_exps", w.matrix(spec["experts"], ff_exp, embd)),
                ("ffn_up_exps", w.matrix(spec["experts"], ff_exp, embd)),
                ("ffn_down_exps", w.matrix(spec["experts"], embd, ff_exp)),
                ("ffn_gate_shexp", w.matrix(shared, embd)), ("ffn_up_shexp", w.matrix(shared, embd)),
                ("ffn_down_shexp", w.matrix(embd, shared)),
            ]
        for name, tensor in tensors:
            writer.add_tensor("blk.%d.%s.weight" % (i, name), tensor)


def write_model(name, path, seed=0):
    spec = SIZES[name]
    writer = gguf.GGUFWriter(path, spec["arch"])
    writer.add_name("cpuinfer-%s-seed%d" % (name, seed))
    writer.add_context_length(spec["ctx"])
    writer.add_embedding_length(spec["embd"])
    writer.add_block_count(spec["layers"])
    writer.add_feed_forward_length(spec["ff"])
    writer.add_head_count(spec["heads"])
    writer.add_layer_norm_rms_eps(1e-5)
    writer.add_file_type(gguf.LlamaFileType.MOSTLY_F16)
    write_tokenizer(writer, spec)
    w = Weights(seed)
    (llama_tensors if spec["arch"] == "llama" else deepseek2_tensors)(writer, spec, w)
    writer.add_tensor("output_norm.weight", w.norm(spec["embd"]))
    writer.add_tensor("output.weight", w.matrix(spec["vocab"], spec["embd"]))
    writer.write_header_to_file()
    writer.write_kv_data_to_file()
    writer.write_tensors_to_file()
    writer.close()


def quantize(source, target, kind):
    # only quantising needs llama.cpp, so it is imported here
    import llama_cpp  # pylint: disable=import-outside-toplevel

    params = llama_cpp.llama_model_quantize_default_params()
    params.ftype = getattr(llama_cpp, "LLAMA_FTYPE_MOSTLY_" + kind)
    if llama_cpp.llama_model_quantize(source.encode(), target.encode(), params) != 0:
        raise RuntimeError("quantizing %s to %s failed" % (source, kind))


def sha256_of(path):
    digest = hashlib.sha256()
    with open(path, "rb") as handle:
        for block in iter(lambda: handle.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("name", choices=sorted(SIZES))
    parser.add_argument("output")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--quantize", choices=["Q8_0", "Q4_0", "Q4_K_M"])
    args = parser.parse_args()
    os.makedirs(os.path.dirname(os.path.abspath(args.output)), exist_ok=True)
    f16 = args.output if not args.quantize else args.output + ".f16.tmp"
    write_model(args.name, f16, args.seed)
    if args.quantize:
        quantize(f16, args.output, args.quantize)
        os.unlink(f16)
    sys.stdout.write("%s  %s\n" % (sha256_of(args.output), args.output))


if __name__ == "__main__":
    main()
