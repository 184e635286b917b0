// Copyright: cpuinfer.llm contributors
// GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
//
// cpuinfer-fa-check: the engine's CPU flash attention against a plain softmax attention, on a batch laid
// out as a server with several slots lays it out: rows of different sequences in one batch, each seeing
// its own cells of one shared KV cache - some only in the last block, some only in the first, one a
// single cell inside a block, one every seventh cell, one nothing at all (expected: zeros).
// Built into ik_llama.cpp's tree as one more target (engine_sources.py); exit status 0 when every case
// agrees, 1 when one does not; a kernel that aborts fails by its signal.
#include "ggml.h"

#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <random>
#include <vector>

namespace {

constexpr int kRowsPerSequence = 8;
constexpr int kSequences = 6;
constexpr int kCells = 512;

// the cells sequence s sees; every query row of a sequence sees the same cells (a prompt's rows would
// see a causal prefix of them, which changes nothing the kernel's block choice depends on)
bool visible(int sequence, int cell) {
    switch (sequence) {
    case 0: return cell >= kCells - 40;              // the last block only
    case 1: return cell >= 100 && cell < 140;        // the middle
    case 2: return cell == 64 + 5;                   // one cell, not the first of its block
    case 3: return cell % 7 == 3;                    // sparse, everywhere
    case 4: return false;                            // nothing: attends to nothing
    default: return cell < 24;                       // the last rows: the first block only
    }
}

struct Case {
    int dk, dv, heads, kv_heads;
    ggml_type kv_type;
    float tolerance;
};

float attention_error(const Case & c, int threads) {
    const int rows = kRowsPerSequence * kSequences;
    const int mask_rows = GGML_PAD(rows, GGML_KQ_MASK_PAD);
    ggml_init_params params = {size_t(64) << 20, nullptr, false};
    ggml_context * ctx = ggml_init(params);
    std::mt19937 rng(42);
    std::uniform_real_distribution<float> uniform(-1.0f, 1.0f);

    std::vector<float> q(size_t(c.dk) * rows * c.heads), k(size_t(c.dk) * kCells * c.kv_heads),
        v(size_t(c.dv) * kCells * c.kv_heads);
    for (auto * data : {&q, &k, &v}) {
        for (auto & x : *data) x = uniform(rng);
    }
    ggml_tensor * tq = ggml_new_tensor_3d(ctx, GGML_TYPE_F32, c.dk, rows, c.heads);
    ggml_tensor * tk = ggml_new_tensor_3d(ctx, c.kv_type, c.dk, kCells, c.kv_heads);
    ggml_tensor * tv = ggml_new_tensor_3d(ctx, c.kv_type, c.dv, kCells, c.kv_heads);
    ggml_tensor * tm = ggml_new_tensor_2d(ctx, GGML_TYPE_F16, kCells, mask_rows);
    std::copy(q.begin(), q.end(), (float *) tq->data);
    ggml_quantize_chunk(c.kv_type, k.data(), tk->data, 0, kCells * c.kv_heads, c.dk, nullptr);
    ggml_quantize_chunk(c.kv_type, v.data(), tv->data, 0, kCells * c.kv_heads, c.dv, nullptr);
    auto * mask = (ggml_fp16_t *) tm->data;
    for (int row = 0; row < mask_rows; ++row) {
        for (int cell = 0; cell < kCells; ++cell) {
            bool seen = row < rows && visible(row / kRowsPerSequence, cell);
            mask[size_t(row) * kCells + cell] = ggml_fp32_to_fp16(seen ? 0.0f : -INFINITY);
        }
    }
    const float scale = 1.0f / std::sqrt(float(c.dk));
    ggml_tensor * out = ggml_flash_attn_ext(ctx, tq, tk, tv, tm, scale, 0.0f, 0.0f);
    ggml_flash_attn_ext_set_prec(out, GGML_PREC_F32);
    ggml_cgraph * graph = ggml_new_graph(ctx);
    ggml_build_forward_expand(graph, out);
    ggml_graph_compute_with_ctx(ctx, graph, threads);

    // out: [dv, heads, rows]
    float worst = 0.0f;
    std::vector<float> weights(kCells);
    for (int row = 0; row < rows; ++row) {
        for (int head = 0; head < c.heads; ++head) {
            const int kv_head = head / (c.heads / c.kv_heads);
            const float * qr = q.data() + (size_t(head) * rows + row) * c.dk;
            float top = -INFINITY, sum = 0.0f;
            for (int cell = 0; cell < kCells; ++cell) {
                weights[cell] = -INFINITY;
                if (!visible(row / kRowsPerSequence, cell)) continue;
                const float * kr = k.data() + (size_t(kv_head) * kCells + cell) * c.dk;
                float dot = 0.0f;
                for (int i = 0; i < c.dk; ++i) dot += qr[i] * kr[i];
                weights[cell] = dot * scale;
                top = std::max(top, weights[cell]);
            }
            for (int cell = 0; cell < kCells; ++cell) {
                weights[cell] = weights[cell] == -INFINITY ? 0.0f : std::exp(weights[cell] - top);
                sum += weights[cell];
            }
            const float * got = (const float *) out->data + (size_t(row) * c.heads + head) * c.dv;
            for (int i = 0; i < c.dv; ++i) {
                float want = 0.0f;
                for (int cell = 0; cell < kCells && sum > 0; ++cell) {
                    want += weights[cell] * v[(size_t(kv_head) * kCells + cell) * c.dv + i];
                }
                if (sum > 0) want /= sum;
                const float error = std::fabs(got[i] - want);
                worst = std::isnan(error) ? INFINITY : std::max(worst, error);
            }
        }
    }
    ggml_free(ctx);
    return worst;
}

}  // namespace

int main(int argc, char ** argv) {
    const int threads = argc > 1 ? std::atoi(argv[1]) : 4;
    // the head sizes of the lab's models (64: llama-250m; 576/512: DeepSeek's latent attention) and
    // common ones, with the cache types the role allows
    const Case cases[] = {
        {64, 64, 4, 2, GGML_TYPE_F16, 0.02f},    {128, 128, 4, 2, GGML_TYPE_F16, 0.02f},
        {192, 128, 4, 4, GGML_TYPE_F16, 0.02f},  {576, 512, 4, 1, GGML_TYPE_F16, 0.02f},
        {64, 64, 4, 2, GGML_TYPE_Q8_0, 0.06f},   {128, 128, 4, 2, GGML_TYPE_Q8_0, 0.06f},
        {576, 512, 4, 1, GGML_TYPE_Q8_0, 0.06f},
    };
    int failed = 0;
    for (const auto & c : cases) {
        const float error = attention_error(c, threads);
        const bool ok = error <= c.tolerance;
        failed += !ok;
        std::printf("%s Dk=%d Dv=%d heads=%d/%d %s: max error %.4f (tolerance %.2f)\n", ok ? "ok  " : "FAIL", c.dk, c.dv,
                    c.heads, c.kv_heads, ggml_type_name(c.kv_type), error, c.tolerance);
    }
    return failed ? 1 : 0;
}
