"""Our fixes of the vendored ik_llama.cpp tree: applied where the build completes the tree, exactly where
written (or the build stops), once, and named in the build key. The fixes' effect is shown by the engine
itself: cpuinfer-fa-check (built with every ik build) and benchmarks/run engines."""

import sys
from pathlib import Path

import pytest

FILES = Path(__file__).resolve().parents[3] / "roles" / "llama_server" / "files"
sys.path.insert(0, str(FILES))

import engine_sources  # noqa: E402
import ik_tree_fixes  # noqa: E402
import llama_build  # noqa: E402

# The lines the fixes replace, as ik-llama-cpp-python 0.1.5 vendors them (one of the four block scans).
FA_HEADER = """#include "ggml-common.h"

namespace {

struct BaseHelper {};

    inline void normalize_and_store_1row(const FMS& fms, int j, qkv_cache_t * R, float * qkv, const float * sinkf) const {
        GGML_ASSERT(S > 0);
        auto norm = F16::set1(1/S);
    }
%s
"""
BLOCK_SCAN = """
        auto mr = mask;
        auto Mc = (const uint16_t *)(mr + (q_step - 1)*stride_m);
        int ik = nk1 - k_step;
        for (; ik >=0 && Mc[ik] != 0; ik -= k_step);
        ik += k_step;
        for (int k1 = 0; k1 < ik/k_step; ++k1) {
"""
SERVER = """                    if (slot.embedding) {
                        // this prompt is too large to process - discard it
                    }
                    else {
                        if (slot.ga_n == 1 && slot.n_prompt_tokens >= slot.n_ctx) {
                            if (!params_base.ctx_shift) {
"""
RELEASE = """void server_context::release_slot_after_final_response(server_slot & slot) {
    slot.print_timings();
    slot.release();
    slot.released = true;
    metrics.on_prediction(slot);
}
"""
HTTP = """                    inputs = tokenize_input_prompts(llama_get_vocab(ctx_server.ctx), ctx_server.mctx, prompt, true, true);
                }
                tasks.reserve(inputs.size());
                for (size_t i = 0; i < inputs.size(); i++) {
"""
EXAMPLES = "    add_subdirectory(sweep-bench)\n    add_subdirectory(tokenize)\nendif()\n"
RESTORE = """            if (!llama_kv_cache_find_slot(kv_self, batch)) {
                return false;
            }

            // DEBUG CHECK: kv_self.head should be our first cell, kv_self.head + cell_count - 1 should be our last cell (verify)
            // Assume that this is one contiguous block of cells
            GGML_ASSERT(kv_self.head + cell_count <= kv_self.size);
            GGML_ASSERT(kv_self.cells[kv_self.head].pos == batch.pos[0]);
            GGML_ASSERT(kv_self.cells[kv_self.head + cell_count - 1].pos == batch.pos[cell_count - 1]);
            GGML_ASSERT(kv_self.cells[kv_self.head].has_seq_id(dest_seq_id));
            GGML_ASSERT(kv_self.cells[kv_self.head + cell_count - 1].has_seq_id(dest_seq_id));

            // Cleanup
"""


def vendored_tree(root, scans=4):
    vendor = root / "vendor" / "ik_llama.cpp"
    for relative, text in ((ik_tree_fixes._FA, FA_HEADER % (BLOCK_SCAN * scans)), (ik_tree_fixes._SERVER, SERVER + RELEASE),
                           (ik_tree_fixes._EXAMPLES, EXAMPLES), (ik_tree_fixes._LLAMA, RESTORE), (ik_tree_fixes._HTTP, HTTP)):
        (vendor / relative).parent.mkdir(parents=True, exist_ok=True)
        (vendor / relative).write_text(text)
    return vendor


def test_every_block_scan_looks_at_every_row_and_a_row_that_sees_nothing_no_longer_aborts(tmp_path):
    vendor = vendored_tree(tmp_path)
    engine_sources.complete("ik_llama.cpp", str(tmp_path))
    header = (vendor / ik_tree_fixes._FA).read_text()
    assert "Mc[ik]" not in header and "GGML_ASSERT(S > 0)" not in header
    assert header.count("int ik = nk1;") == 4
    # every block is looked at, and one that no row of the group sees is stepped over as the loop steps
    skip = ("        for (int k1 = 0; k1 < ik/k_step; ++k1) {\n"
            "            if (!cpuinfer_block_seen(mr, stride_m, q_step, k_step)) {\n"
            "                kh.next_block(k_step);\n"
            "                vh.next_block(k_step);\n"
            "                mr += k_step*sizeof(ggml_half);\n"
            "                continue;\n"
            "            }\n")
    assert header.count(skip) == 4
    # the helper is defined once, inside the header's own namespace, before its first use
    assert header.count("inline bool cpuinfer_block_seen(") == 1
    assert header.index("namespace {") < header.index("inline bool cpuinfer_block_seen(") < header.index("BaseHelper")
    assert "if (!(S > 0)) {" in header and "auto norm = F16::set1(1/S);" in header


def test_a_prompt_longer_than_its_slot_is_refused_with_400_before_context_shift(tmp_path):
    vendor = vendored_tree(tmp_path)
    engine_sources.complete("ik_llama.cpp", str(tmp_path))
    server = (vendor / ik_tree_fixes._SERVER).read_text()
    refusal = server.index("ERROR_TYPE_INVALID_REQUEST")
    assert refusal < server.index("if (!params_base.ctx_shift)")
    assert server.count("slot.n_prompt_tokens >= slot.n_ctx") == 2
    # release() frees only a slot that is processing: the refusal marks it so first
    refused = server[refusal:server.index("continue;", refusal)]
    assert refused.index("slot.state = SLOT_STATE_PROCESSING;") < refused.index("slot.release();")


def test_a_prompt_restored_into_scattered_cells_fails_the_restore_instead_of_aborting(tmp_path):
    vendor = vendored_tree(tmp_path)
    engine_sources.complete("ik_llama.cpp", str(tmp_path))
    restore = (vendor / ik_tree_fixes._LLAMA).read_text()
    assert "GGML_ASSERT" not in restore
    check = restore[restore.index("bool contiguous"):restore.index("// Cleanup")]
    assert "kv_self.cells[kv_self.head + i].pos == batch.pos[i]" in check and "return false;" in check
    # the C++ string keeps its escape: the fix is put in as written, not read as a template
    assert 'kv cache\\n", __func__' in check


def test_a_prompt_id_outside_the_vocabulary_is_refused_where_the_request_is_parsed(tmp_path):
    vendor = vendored_tree(tmp_path)
    engine_sources.complete("ik_llama.cpp", str(tmp_path))
    http = (vendor / ik_tree_fixes._HTTP).read_text()
    # before any task is made: slot selection turns the ids into text
    check = http.index("if (!input.validate(ctx_server.ctx))")
    assert http.index("tokenize_input_prompts") < check < http.index("tasks.reserve") < http.index("for (size_t i = 0;")
    # the handler's catch answers an exception with ERROR_TYPE_INVALID_REQUEST (400)
    assert "throw std::invalid_argument(\"the prompt has a token id outside the model's vocabulary\");" in http


def test_a_finished_slots_cells_are_saved_in_ram_before_they_are_freed_and_kept_without_a_prompt_cache(tmp_path):
    vendor = vendored_tree(tmp_path)
    engine_sources.complete("ik_llama.cpp", str(tmp_path))
    server = (vendor / ik_tree_fixes._SERVER).read_text()
    release = server[server.index("release_slot_after_final_response"):]
    # after the slot is released and counted; saved before freed (the next turn is restored from RAM)
    order = ["slot.release();", "metrics.on_prediction(slot);", "slot.prompt_save(*prompt_cache);",
             "llama_kv_cache_seq_rm(ctx, slot.id, -1, -1);", "slot.cache_tokens.keep_first(0);"]
    assert [release.index(line) for line in order] == sorted(release.index(line) for line in order)
    # nothing freed without a prompt cache to restore from, or when the environment asks to keep
    condition = release[release.index("if (!keep_cells"):release.index("copy_data_to_cached_prompt")]
    assert "prompt_cache &&" in condition and "!params_base.do_checkpoint" in condition
    assert '== "keep"' in release[release.index("keep_cells ="):release.index("if (!keep_cells")]


def test_the_flash_attention_check_is_one_more_target_of_the_tree(tmp_path):
    vendor = vendored_tree(tmp_path)
    engine_sources.complete("ik_llama.cpp", str(tmp_path))
    assert "add_subdirectory(cpuinfer-fa-check)" in (vendor / "examples" / "CMakeLists.txt").read_text()
    check = vendor / "examples" / "cpuinfer-fa-check"
    assert "add_executable(${TARGET} fa-check.cpp)" in (check / "CMakeLists.txt").read_text()
    assert "ggml_flash_attn_ext" in (check / "fa-check.cpp").read_text()
    assert "cpuinfer-fa-check" in engine_sources.targets("ik_llama.cpp")
    assert "cpuinfer-fa-check" not in engine_sources.targets("llama.cpp")


def test_a_tree_completed_twice_is_fixed_once(tmp_path):
    vendor = vendored_tree(tmp_path)
    engine_sources.complete("ik_llama.cpp", str(tmp_path))
    once = {p: p.read_text() for p in vendor.rglob("*") if p.is_file()}
    engine_sources.complete("ik_llama.cpp", str(tmp_path))
    assert {p: p.read_text() for p in vendor.rglob("*") if p.is_file()} == once


def test_a_tree_the_fixes_were_not_written_for_stops_the_build(tmp_path):
    vendored_tree(tmp_path, scans=3)  # a release that changed one of the scans
    with pytest.raises(ik_tree_fixes.FixDoesNotApply, match="matched 3 times"):
        engine_sources.complete("ik_llama.cpp", str(tmp_path))


def test_the_fixes_are_in_the_forks_build_key_and_mainlines_key_is_unchanged(monkeypatch):
    args = ["--version", "0.1.5", "--build-class", "x86-avx2", "--cache", "/c", "--machine", "x86_64",
            "--python-version", "3.11", "--distribution", "Debian", "--release", "bookworm", "--glibc", "2.36"]
    fork = llama_build.cache_key(llama_build.parse_args(args + ["--engine", "ik_llama.cpp"]))
    mainline = llama_build.cache_key(llama_build.parse_args(args))
    monkeypatch.setattr(ik_tree_fixes, "FIXES", ik_tree_fixes.FIXES[:-1])
    assert llama_build.cache_key(llama_build.parse_args(args + ["--engine", "ik_llama.cpp"])) != fork
    assert llama_build.cache_key(llama_build.parse_args(args)) == mainline
    assert engine_sources.changes_digest("llama.cpp") == ""
