# Copyright: cpuinfer.llm contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Our fixes of the ik_llama.cpp tree that ik-llama-cpp-python 0.1.5 vendors (upstream of mid-April 2026).

Each fix is written by us from the public root cause, applied to the unpacked sdist before it is built
(engine_sources.complete) and named in the build key (fixes_digest), so a changed fix makes a new build.
A fix whose original text is not found the expected number of times stops the build: a new sdist
release must be read again, not patched blindly.

flash-attention-rows  The CPU flash attention (ggml/src/iqk/fa/iqk_fa_templates.h) picked the K blocks a
    group of query rows visits from the mask of the group's last row alone, one cell per block. With
    several sequences in one batch (a server with --parallel) the rows of one group belong to different
    slots, which see different cells of the one shared KV cache: an earlier row could be left with its
    visible cells unvisited - wrong attention, or nothing visited, softmax sum 0 and GGML_ASSERT(S > 0).
    The fix looks at every block and skips exactly those in which no row of the group sees any cell (a
    scan of the mask, 1/head-size of the dot products it saves), which also spares a slot the other
    slots' cells wherever they lie in the shared cache; a row that truly sees no cell is written as zeros
    instead of aborting the server.
prompt-fits-slot  The server cut a prompt longer than a slot's context to fit (context shift) and, with
    --no-context-shift, meant to refuse it but left the slot running it (release() acts only on a slot
    already processing). Several slots doing so at once filled the one shared KV cache: every running request
    failed with 500. A prompt that does not fit its slot is now refused with 400 before it is decoded, as
    mainline's server does, and the slot is free again.
kv-restore-contiguous  Restoring a saved prompt into a slot (the server's prompt cache in RAM) asserted
    that the cells it was given are one contiguous run from the cache's head; in a cache fragmented by
    several slots they are not, and the server aborted (GGML_ASSERT(kv_self.cells[kv_self.head].pos ==
    batch.pos[0])). The restore now fails instead - its cells removed, the request served without the
    saved prompt - as the restore already did when it found no cells at all.
prompt-ids-in-vocab  A completion whose prompt is given as token ids took the server down when an id was
    outside the model's vocabulary: the ids went unchecked to slot selection, which turns them into text
    (and the decode reads past the embeddings). The tree has the check (server_tokens::validate) but never
    calls it; it is now called where the request is parsed, before any task exists, and such a prompt is
    refused with 400, as mainline's server does.
slot-cells-freed  The server keeps a finished request's cells in the one KV cache shared by every slot
    (for reuse by the slot's next prompt), so the cache's used span grows towards every slot's last context
    and each prompt pays for cells of other slots (DeepSeek's MLA rebuilds K and V for every used cell): a
    lone stream after a few concurrent ones was prefilled at two thirds of a fresh server's speed. A finished
    slot's cells are now saved in the server's prompt cache in RAM and then freed; the next turn of the same
    conversation is restored from RAM (freed without the save, it would be prefilled whole again). With the
    prompt cache off (--cache-ram 0) the cells are kept, as before. CPUINFER_IK_SLOT_CELLS=keep in the
    server's environment keeps the tree's behaviour (the engines benchmark compares both).
fa-check  Not a fix: our flash-attention check (fa_check/fa-check.cpp, added by engine_sources) built
    as one more target of the tree.
"""

import hashlib
import re

_FA = "ggml/src/iqk/fa/iqk_fa_templates.h"
_SERVER = "examples/server/server-context.cpp"
_EXAMPLES = "examples/CMakeLists.txt"
_LLAMA = "src/llama.cpp"
_HTTP = "examples/server/server.cpp"

_BLOCK_SEEN = r'''namespace {

// cpuinfer.llm (flash-attention-rows): whether any of a group's rows sees any cell of the k_step block whose
// mask starts at mask (f16; -inf marks a cell the row does not see)
inline bool cpuinfer_block_seen(const char * mask, int stride_m, int rows, int k_step) {
    constexpr uint16_t masked = 0xfc00;
    for (int row = 0; row < rows; ++row) {
        auto cells = (const uint16_t *)(mask + row*stride_m);
        for (int cell = 0; cell < k_step; ++cell) {
            if (cells[cell] != masked) return true;
        }
    }
    return false;
}
'''

_ZERO_ROW = r'''        if (!(S > 0)) {
            // cpuinfer.llm (flash-attention-rows): a row that sees no cell attends to nothing
            auto zero = F16::set1(0.f);
            for (int i = 0; i < D/F16::block_size; ++i) F16::store(qkv + F16::block_size*i, zero);
            return;
        }
        auto norm = F16::set1(1/S);
'''

_PROMPT_TOO_LONG = r'''                        if (slot.ga_n == 1 && slot.n_prompt_tokens >= slot.n_ctx) {
                            // cpuinfer.llm (prompt-fits-slot): refused whatever --context-shift says; the slot
                            // is marked processing first, or release() leaves it running the prompt
                            send_error(slot, "the request exceeds the available context size, try increasing it", ERROR_TYPE_INVALID_REQUEST);
                            slot.state = SLOT_STATE_PROCESSING;
                            slot.command = SLOT_COMMAND_NONE;
                            slot.release();
                            continue;
                        }
                        if (slot.ga_n == 1 && slot.n_prompt_tokens >= slot.n_ctx) {
'''

_RESTORE_CHECK = r'''            // cpuinfer.llm (kv-restore-contiguous): cells that are not one run from the head fail the restore
            bool contiguous = kv_self.head + cell_count <= kv_self.size;
            for (uint32_t i = 0; contiguous && i < cell_count; ++i) {
                contiguous = kv_self.cells[kv_self.head + i].pos == batch.pos[i]
                    && kv_self.cells[kv_self.head + i].has_seq_id(dest_seq_id);
            }
            if (!contiguous) {
                llama_batch_free(batch);
                LLAMA_LOG_ERROR("%s: the restored cells are not one contiguous run in the kv cache\n", __func__);
                return false;
            }
'''

_IDS_IN_VOCAB = r'''\1// cpuinfer.llm (prompt-ids-in-vocab): an id the vocabulary lacks is refused before any task exists
\1for (const auto & input : inputs) {
\1    if (!input.validate(ctx_server.ctx)) {
\1        throw std::invalid_argument("the prompt has a token id outside the model's vocabulary");
\1    }
\1}
\1tasks.reserve(inputs.size());
'''

_FREE_RELEASE = r'''\1metrics.on_prediction(slot);
\1// cpuinfer.llm (slot-cells-freed): a finished slot's cells saved in the prompt cache in RAM, then freed
\1static const bool keep_cells = std::getenv("CPUINFER_IK_SLOT_CELLS") != nullptr
\1    && std::string(std::getenv("CPUINFER_IK_SLOT_CELLS")) == "keep";
\1if (!keep_cells && prompt_cache && !params_base.do_checkpoint && !slot.cache_tokens.empty()
\1        && slot.cache_tokens.size() >= (size_t) cache_ram_n_min) {
\1    copy_data_to_cached_prompt(slot.cache_tokens, slot);
\1    slot.server_cached_prompt.data.clear();
\1    slot.prompt_save(*prompt_cache);
\1    prompt_cache->update();
\1    llama_kv_cache_seq_rm(ctx, slot.id, -1, -1);
\1    slot.cache_tokens.keep_first(0);
\1    slot.n_discarded_prompt = 0;
\1    slot.n_kept_prompt = 0;
\1}
'''


class Expand:
    """A replacement that names the pattern's groups (\\1); a plain string is put in as it is written."""

    def __init__(self, template):
        self.template = template

    def __call__(self, match):
        return match.expand(self.template)

    def __repr__(self):
        return "Expand(%r)" % self.template


# (name, file, pattern, replacement, times the pattern must match)
FIXES = (
    ("flash-attention-rows", _FA, r"^namespace \{\n", _BLOCK_SEEN, 1),
    ("flash-attention-rows", _FA,
     r"^( *)auto Mc = \(const uint16_t \*\)\(mr \+ \(q_step - 1\)\*stride_m\);\n"
     r" *int ik = nk1 - k_step;\n"
     r" *for \(; ik >=0 && Mc\[ik\] != 0; ik -= k_step\);\n"
     r" *ik \+= k_step;\n",
     Expand(r"\1int ik = nk1;  // cpuinfer.llm (flash-attention-rows): every block, those no row sees skipped\n"), 4),
    ("flash-attention-rows", _FA, r"^( *)for \(int k1 = 0; k1 < ik/k_step; \+\+k1\) \{\n",
     Expand(r"\1for (int k1 = 0; k1 < ik/k_step; ++k1) {\n"
            r"\1    if (!cpuinfer_block_seen(mr, stride_m, q_step, k_step)) {\n"
            r"\1        kh.next_block(k_step);\n"
            r"\1        vh.next_block(k_step);\n"
            r"\1        mr += k_step*sizeof(ggml_half);\n"
            r"\1        continue;\n"
            r"\1    }\n"), 4),
    ("flash-attention-rows", _FA, r"^ *GGML_ASSERT\(S > 0\);\n *auto norm = F16::set1\(1/S\);\n", _ZERO_ROW, 1),
    ("fa-check", _EXAMPLES, r"^( *)add_subdirectory\(tokenize\)\n",
     Expand(r"\1add_subdirectory(tokenize)\n\1# cpuinfer.llm (fa-check): our flash-attention check\n\1add_subdirectory(cpuinfer-fa-check)\n"), 1),
    ("kv-restore-contiguous", _LLAMA,
     r"^ *// DEBUG CHECK: kv_self\.head should be our first cell.*\n *// Assume that this is one contiguous block of cells\n"
     r"(?: *GGML_ASSERT\(kv_self\.(?:head|cells).*\);\n){5}", _RESTORE_CHECK, 1),
    ("prompt-fits-slot", _SERVER, r"^ *if \(slot\.ga_n == 1 && slot\.n_prompt_tokens >= slot\.n_ctx\) \{\n", _PROMPT_TOO_LONG, 1),
    ("prompt-ids-in-vocab", _HTTP, r"^( *)tasks\.reserve\(inputs\.size\(\)\);\n", Expand(_IDS_IN_VOCAB), 1),
    ("slot-cells-freed", _SERVER,
     r"^( *)slot\.released = true;\n *metrics\.on_prediction\(slot\);\n",
     Expand(r"\1slot.released = true;\n" + _FREE_RELEASE), 1),
)
# marks a file already fixed (a tree completed twice is left as it is)
_MARK = "cpuinfer.llm ("


class FixDoesNotApply(RuntimeError):
    """The tree is not the one the fix was written for."""


def apply(vendor):
    """Applies every fix to the ik_llama.cpp tree at vendor (its top directory); returns the names applied."""
    by_file = {}
    for fix in FIXES:
        by_file.setdefault(fix[1], []).append(fix)
    applied = []
    for relative, fixes in sorted(by_file.items()):
        path = "%s/%s" % (vendor, relative)
        with open(path, encoding="utf-8") as handle:
            text = handle.read()
        if _MARK in text:
            continue
        for name, dummy_file, pattern, replacement, times in fixes:
            put = replacement if isinstance(replacement, Expand) else (lambda match, literal=replacement: literal)
            text, found = re.subn(pattern, put, text, flags=re.MULTILINE)
            if found != times:
                raise FixDoesNotApply("%s: %s matched %d times in %s, not %d" % (name, pattern[:60], found, relative, times))
            applied.append(name)
        with open(path, "w", encoding="utf-8") as handle:
            handle.write(text)
    return sorted(set(applied))


def fixes_digest():
    """What the fixes are, for the build key."""
    return hashlib.sha256(repr(FIXES).encode()).hexdigest()[:12]
