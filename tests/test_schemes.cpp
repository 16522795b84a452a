// Every positional scheme against the double-precision reference, scheme properties (relative-only
// dependence, sinusoid linearity, xPos decay), the standalone positional kernels and the
// positional functions.
#include "test_support.h"

#include <algorithm>
#include <cmath>
#include <functional>
#include <limits>
#include <string>
#include <vector>

using namespace attngen;
using namespace attngen::test;

namespace {

AttnCase base_case(int B, int H, int Hkv, int Lq, int Lk, int D, uint64_t seed, attngen_mask mask) {
    AttnCase c = make_case(B, H, Hkv, Lq, Lk, D, seed);
    c.mask = mask;
    return c;
}

// Relative-position schemes depend on j - p_i only, with queries bottom-right aligned: in a causal
// run with Lq == Lk, the last row equals a decode step (Lq = 1) over the same keys, and the last C
// rows equal a chunked prefill (Lq = C) over the same keys.
void check_bottom_right_consistency(const AttnCase &full) {
    REQUIRE(full.q_len == full.k_len);
    INFO(full.describe());
    std::vector<float> out_full, out_decode, out_chunk;
    const Status s_full = run_attngen(full, out_full);
    INFO(s_full.message);
    REQUIRE(s_full.ok());
    const AttnCase decode = last_query_rows(full, 1);
    REQUIRE(run_attngen(decode, out_decode).ok());
    const int C = std::max(2, full.q_len / 3);
    const AttnCase chunk = last_query_rows(full, C);
    REQUIRE(run_attngen(chunk, out_chunk).ok());
    for (int b = 0; b < full.batch; b++) {
        for (int h = 0; h < full.heads; h++) {
            INFO("b=" << b << " h=" << h);
            CHECK_CLOSE(output_row(decode, out_decode, b, h, 0), output_row(full, out_full, b, h, full.q_len - 1), 1e-5,
                        1e-5);
            for (int i = 0; i < C; i++) {
                CHECK_CLOSE(output_row(chunk, out_chunk, b, h, i), output_row(full, out_full, b, h, full.q_len - C + i),
                            1e-5, 1e-5);
            }
        }
    }
    // And every run matches the reference.
    CHECK_CLOSE(out_full, reference_output(full), kAtol, kRtol);
    CHECK_CLOSE(out_decode, reference_output(decode), kAtol, kRtol);
}

std::vector<int32_t> shifted_positions(int batch, int length, int first, int shift) {
    std::vector<int32_t> p(std::size_t(batch) * length);
    for (int b = 0; b < batch; b++) {
        for (int n = 0; n < length; n++)
            p[std::size_t(b) * length + n] = first + n + shift;
    }
    return p;
}

}  // namespace

// =================================================================================================
// ALiBi
// =================================================================================================

TEST_CASE("alibi: default slopes, causal prefill", "[schemes][alibi]") {
    AttnCase a = base_case(2, 8, 8, 9, 9, 16, 200, ATTNGEN_MASK_CAUSAL);
    set_alibi(a);
    CHECK_MATCHES_REFERENCE(a);
    AttnCase b = base_case(1, 6, 6, 33, 33, 8, 201, ATTNGEN_MASK_CAUSAL);  // non power of two heads
    set_alibi(b);
    CHECK_MATCHES_REFERENCE(b);
    AttnCase c = base_case(1, 12, 12, 7, 7, 32, 202, ATTNGEN_MASK_CAUSAL);
    set_alibi(c);
    CHECK_MATCHES_REFERENCE(c);
}

TEST_CASE("alibi: decode", "[schemes][alibi][decode]") {
    AttnCase a = base_case(2, 8, 8, 1, 17, 16, 203, ATTNGEN_MASK_CAUSAL);
    set_alibi(a);
    CHECK_MATCHES_REFERENCE(a);
    AttnCase b = base_case(1, 20, 20, 1, 33, 8, 204, ATTNGEN_MASK_NONE);
    set_alibi(b);
    CHECK_MATCHES_REFERENCE(b);
}

TEST_CASE("alibi: explicit slopes, GQA, non-causal and chunked prefill", "[schemes][alibi][gqa]") {
    AttnCase a = base_case(2, 8, 2, 11, 11, 16, 205, ATTNGEN_MASK_NONE);
    set_alibi(a, true);
    CHECK_MATCHES_REFERENCE(a);
    AttnCase b = base_case(1, 4, 1, 5, 23, 24, 206, ATTNGEN_MASK_CAUSAL);
    set_alibi(b, true);
    CHECK_MATCHES_REFERENCE(b);
    AttnCase c = base_case(1, 6, 3, 1, 40, 16, 207, ATTNGEN_MASK_CAUSAL);
    set_alibi(c, true);
    CHECK_MATCHES_REFERENCE(c);
}

TEST_CASE("alibi: symmetric (bidirectional) bias", "[schemes][alibi]") {
    AttnCase a = base_case(1, 4, 4, 11, 11, 16, 208, ATTNGEN_MASK_NONE);
    set_alibi(a, false, true);
    CHECK_MATCHES_REFERENCE(a);
    AttnCase b = base_case(2, 2, 2, 4, 13, 8, 209, ATTNGEN_MASK_NONE);
    set_alibi(b, true, true);
    CHECK_MATCHES_REFERENCE(b);
    // Symmetric differs from the one-sided bias when future keys are visible.
    AttnCase one_sided = a;
    one_sided.alibi_symmetric = false;
    std::vector<float> sym, one;
    REQUIRE(run_attngen(a, sym).ok());
    REQUIRE(run_attngen(one_sided, one).ok());
    CHECK_FALSE(compare(sym, one, 1e-3, 0).ok);
}

TEST_CASE("alibi: fast-path and odd head dims", "[schemes][alibi][head_dim]") {
    const int D = GENERATE(64, 128, 13);
    AttnCase a = base_case(1, 4, 2, 19, 19, D, 210 + D, ATTNGEN_MASK_CAUSAL);
    set_alibi(a);
    CHECK_MATCHES_REFERENCE(a);
    AttnCase b = base_case(2, 4, 4, 1, 27, D, 211 + D, ATTNGEN_MASK_CAUSAL);
    set_alibi(b, true);
    CHECK_MATCHES_REFERENCE(b);
}

TEST_CASE("alibi: sliding window and kv padding", "[schemes][alibi][padding]") {
    AttnCase a = base_case(2, 4, 4, 14, 14, 16, 212, ATTNGEN_MASK_SLIDING_WINDOW);
    a.window = 5;
    a.kv_lengths = {14, 9};
    set_alibi(a);
    CHECK_MATCHES_REFERENCE(a);
    AttnCase b = base_case(3, 2, 1, 1, 12, 16, 213, ATTNGEN_MASK_NONE);
    b.kv_lengths = {0, 12, 4};
    set_alibi(b);
    CHECK_MATCHES_REFERENCE(b);
}

TEST_CASE("alibi: depends on relative position only (decode and chunk equal the full run)",
          "[schemes][alibi][property]") {
    AttnCase a = base_case(2, 4, 2, 24, 24, 16, 214, ATTNGEN_MASK_CAUSAL);
    set_alibi(a);
    check_bottom_right_consistency(a);
}

TEST_CASE("alibi: random shapes, masks, padding and parameters (seeded sweep)", "[schemes][alibi][sweep]") {
    for (uint64_t seed = 1; seed <= 100; seed++) {
        AttnCase c = random_case(2000 + seed, {5, 16, 33, 64, 128});
        set_random_scheme(c, ATTNGEN_SCHEME_ALIBI, seed);
        CHECK_MATCHES_REFERENCE(c);
    }
}

// =================================================================================================
// T5
// =================================================================================================

TEST_CASE("t5: bidirectional encoder buckets, no mask", "[schemes][t5]") {
    AttnCase a = base_case(2, 4, 4, 7, 7, 16, 220, ATTNGEN_MASK_NONE);
    set_t5(a, 32, 128, true);
    CHECK_MATCHES_REFERENCE(a);
    AttnCase b = base_case(1, 2, 2, 33, 33, 8, 221, ATTNGEN_MASK_NONE);
    set_t5(b, 32, 128, true);
    CHECK_MATCHES_REFERENCE(b);
}

TEST_CASE("t5: unidirectional decoder buckets, causal", "[schemes][t5][causal]") {
    AttnCase a = base_case(1, 3, 3, 33, 33, 8, 222, ATTNGEN_MASK_CAUSAL);
    set_t5(a, 32, 128, false);
    CHECK_MATCHES_REFERENCE(a);
    AttnCase b = base_case(2, 2, 2, 6, 19, 16, 223, ATTNGEN_MASK_CAUSAL);
    set_t5(b, 32, 128, false);
    CHECK_MATCHES_REFERENCE(b);
}

TEST_CASE("t5: decode", "[schemes][t5][decode]") {
    AttnCase a = base_case(2, 4, 4, 1, 20, 16, 224, ATTNGEN_MASK_CAUSAL);
    set_t5(a, 32, 128, false);
    CHECK_MATCHES_REFERENCE(a);
    AttnCase b = base_case(1, 2, 2, 1, 300, 16, 225, ATTNGEN_MASK_NONE);  // distances past max_distance
    set_t5(b, 32, 128, true);
    CHECK_MATCHES_REFERENCE(b);
}

TEST_CASE("t5: long distances (log buckets saturate at max_distance)", "[schemes][t5]") {
    AttnCase a = base_case(1, 2, 2, 200, 200, 8, 226, ATTNGEN_MASK_NONE);
    set_t5(a, 32, 128, true);
    CHECK_MATCHES_REFERENCE(a);
    AttnCase b = base_case(1, 2, 2, 150, 150, 8, 227, ATTNGEN_MASK_CAUSAL);
    set_t5(b, 32, 128, false);
    CHECK_MATCHES_REFERENCE(b);
}

TEST_CASE("t5: other bucket counts and max distances", "[schemes][t5]") {
    struct Params {
        int buckets, max_distance;
        bool bidirectional;
    };
    for (const Params &p : {Params{8, 20, true}, Params{16, 32, false}, Params{64, 256, true}, Params{4, 9, false}}) {
        AttnCase a =
            base_case(1, 3, 3, 40, 40, 16, 228 + p.buckets, p.bidirectional ? ATTNGEN_MASK_NONE : ATTNGEN_MASK_CAUSAL);
        set_t5(a, p.buckets, p.max_distance, p.bidirectional);
        CHECK_MATCHES_REFERENCE(a);
    }
}

TEST_CASE("t5: no default scaling, explicit scale, GQA and head dims", "[schemes][t5][gqa][head_dim]") {
    const int D = GENERATE(64, 128, 7);
    AttnCase a = base_case(1, 4, 2, 17, 17, D, 230 + D, ATTNGEN_MASK_CAUSAL);
    set_t5(a, 32, 128, false);
    for (float &x : a.q)
        x *= 0.2f;  // unscaled logits stay moderate
    CHECK_MATCHES_REFERENCE(a);
    AttnCase b = a;
    b.scale = 0.125f;
    CHECK_MATCHES_REFERENCE(b);
    AttnCase c = base_case(2, 4, 1, 1, 25, D, 231 + D, ATTNGEN_MASK_NONE);
    set_t5(c, 32, 128, true);
    for (float &x : c.q)
        x *= 0.2f;
    CHECK_MATCHES_REFERENCE(c);
}

TEST_CASE("t5: sliding window and kv padding", "[schemes][t5][padding]") {
    AttnCase a = base_case(2, 2, 2, 16, 16, 16, 232, ATTNGEN_MASK_SLIDING_WINDOW);
    a.window = 6;
    a.kv_lengths = {11, 16};
    set_t5(a, 32, 128, false);
    CHECK_MATCHES_REFERENCE(a);
}

TEST_CASE("t5: depends on relative position only (decode and chunk equal the full run)", "[schemes][t5][property]") {
    AttnCase a = base_case(1, 3, 3, 30, 30, 16, 233, ATTNGEN_MASK_CAUSAL);
    set_t5(a, 32, 128, false);
    check_bottom_right_consistency(a);
}

TEST_CASE("t5: random shapes, masks, padding and parameters (seeded sweep)", "[schemes][t5][sweep]") {
    for (uint64_t seed = 1; seed <= 100; seed++) {
        AttnCase c = random_case(3000 + seed, {5, 16, 33, 64, 128});
        set_random_scheme(c, ATTNGEN_SCHEME_T5, seed);
        CHECK_MATCHES_REFERENCE(c);
    }
}

// =================================================================================================
// Shaw
// =================================================================================================

TEST_CASE("shaw: bidirectional with key and value tables", "[schemes][shaw]") {
    AttnCase a = base_case(2, 2, 2, 7, 7, 8, 240, ATTNGEN_MASK_NONE);
    set_shaw(a, 2, true);
    CHECK_MATCHES_REFERENCE(a);
    AttnCase b = base_case(1, 2, 2, 9, 9, 32, 241, ATTNGEN_MASK_NONE);  // K >= L: no clipping
    set_shaw(b, 16, true);
    CHECK_MATCHES_REFERENCE(b);
}

TEST_CASE("shaw: key table only (no value term)", "[schemes][shaw]") {
    AttnCase a = base_case(1, 2, 2, 9, 9, 32, 242, ATTNGEN_MASK_NONE);
    set_shaw(a, 16, false);
    CHECK_MATCHES_REFERENCE(a);
    AttnCase b = base_case(2, 3, 3, 12, 12, 16, 243, ATTNGEN_MASK_CAUSAL);
    set_shaw(b, 3, false);
    CHECK_MATCHES_REFERENCE(b);
}

TEST_CASE("shaw: causal with clipping", "[schemes][shaw][causal]") {
    AttnCase a = base_case(1, 4, 4, 33, 33, 16, 244, ATTNGEN_MASK_CAUSAL);
    set_shaw(a, 4, true);
    CHECK_MATCHES_REFERENCE(a);
    AttnCase b = base_case(1, 2, 2, 6, 21, 16, 245, ATTNGEN_MASK_CAUSAL);
    set_shaw(b, 1, true);
    CHECK_MATCHES_REFERENCE(b);
}

TEST_CASE("shaw: decode", "[schemes][shaw][decode]") {
    AttnCase a = base_case(2, 2, 2, 1, 17, 8, 246, ATTNGEN_MASK_CAUSAL);
    set_shaw(a, 4, true);
    CHECK_MATCHES_REFERENCE(a);
    AttnCase b = base_case(1, 4, 2, 1, 50, 16, 247, ATTNGEN_MASK_NONE);
    set_shaw(b, 8, true);
    CHECK_MATCHES_REFERENCE(b);
}

TEST_CASE("shaw: GQA and head dims", "[schemes][shaw][gqa][head_dim]") {
    const int D = GENERATE(64, 128, 13);
    AttnCase a = base_case(1, 4, 2, 15, 15, D, 248 + D, ATTNGEN_MASK_CAUSAL);
    set_shaw(a, 5, true);
    CHECK_MATCHES_REFERENCE(a);
    AttnCase b = base_case(2, 2, 1, 1, 20, D, 249 + D, ATTNGEN_MASK_CAUSAL);
    set_shaw(b, 3, true);
    CHECK_MATCHES_REFERENCE(b);
}

TEST_CASE("shaw: sliding window and kv padding", "[schemes][shaw][padding]") {
    AttnCase a = base_case(2, 2, 2, 13, 13, 16, 250, ATTNGEN_MASK_SLIDING_WINDOW);
    a.window = 4;
    a.kv_lengths = {13, 6};
    set_shaw(a, 3, true);
    CHECK_MATCHES_REFERENCE(a);
}

// Sequences spanning several query tiles and key chunks with a small clip: most (tile, chunk) blocks lie
// wholly at <= -K or >= K (their mass goes to one end row of aV), some meet the band |j - p_i| < K.
TEST_CASE("shaw: long sequences with a small clip (blocks in a tail and in the band)", "[schemes][shaw][long]") {
    AttnCase both_tails = base_case(1, 2, 2, 300, 520, 16, 252, ATTNGEN_MASK_NONE);
    set_shaw(both_tails, 5, true);
    CHECK_MATCHES_REFERENCE(both_tails);
    AttnCase bottom_right = base_case(1, 2, 1, 200, 450, 64, 253, ATTNGEN_MASK_CAUSAL);
    set_shaw(bottom_right, 16, true);
    CHECK_MATCHES_REFERENCE(bottom_right);
    AttnCase window = base_case(2, 2, 2, 260, 260, 16, 254, ATTNGEN_MASK_SLIDING_WINDOW);
    window.window = 40;
    window.kv_lengths = {260, 190};
    set_shaw(window, 3, true);
    CHECK_MATCHES_REFERENCE(window);
    AttnCase decode = base_case(2, 2, 1, 1, 1100, 64, 255, ATTNGEN_MASK_CAUSAL);
    decode.kv_lengths = {1100, 700};
    set_shaw(decode, 8, true);
    CHECK_MATCHES_REFERENCE(decode);
}

TEST_CASE("shaw: depends on relative position only (decode and chunk equal the full run)",
          "[schemes][shaw][property]") {
    AttnCase a = base_case(1, 2, 2, 27, 27, 16, 251, ATTNGEN_MASK_CAUSAL);
    set_shaw(a, 4, true);
    check_bottom_right_consistency(a);
}

TEST_CASE("shaw: random shapes, masks, padding and parameters (seeded sweep)", "[schemes][shaw][sweep]") {
    for (uint64_t seed = 1; seed <= 100; seed++) {
        AttnCase c = random_case(4000 + seed, {5, 16, 33, 64, 128});
        set_random_scheme(c, ATTNGEN_SCHEME_SHAW, seed);
        CHECK_MATCHES_REFERENCE(c);
    }
}

// =================================================================================================
// Transformer-XL
// =================================================================================================

TEST_CASE("txl: no memory, causal", "[schemes][txl]") {
    AttnCase a = base_case(2, 2, 2, 9, 9, 8, 260, ATTNGEN_MASK_CAUSAL);
    set_txl(a);
    CHECK_MATCHES_REFERENCE(a);
    AttnCase b = base_case(1, 4, 4, 33, 33, 16, 261, ATTNGEN_MASK_CAUSAL);
    set_txl(b);
    CHECK_MATCHES_REFERENCE(b);
}

TEST_CASE("txl: with memory (Lq < Lk)", "[schemes][txl]") {
    AttnCase a = base_case(1, 4, 4, 7, 17, 16, 262, ATTNGEN_MASK_CAUSAL);
    set_txl(a);
    CHECK_MATCHES_REFERENCE(a);
}

TEST_CASE("txl: decode with memory", "[schemes][txl][decode]") {
    AttnCase a = base_case(2, 2, 2, 1, 17, 32, 263, ATTNGEN_MASK_CAUSAL);
    set_txl(a);
    CHECK_MATCHES_REFERENCE(a);
    AttnCase b = base_case(1, 3, 3, 1, 5, 8, 264, ATTNGEN_MASK_NONE);
    set_txl(b);
    CHECK_MATCHES_REFERENCE(b);
}

TEST_CASE("txl: non-causal clamps future distances to the last row", "[schemes][txl]") {
    AttnCase a = base_case(1, 2, 2, 8, 8, 16, 265, ATTNGEN_MASK_NONE);
    set_txl(a);
    CHECK_MATCHES_REFERENCE(a);
    AttnCase b = base_case(1, 2, 2, 4, 10, 16, 266, ATTNGEN_MASK_NONE);
    set_txl(b);
    CHECK_MATCHES_REFERENCE(b);
}

TEST_CASE("txl: GQA and head dims", "[schemes][txl][gqa][head_dim]") {
    const int D = GENERATE(64, 128, 11);
    AttnCase a = base_case(1, 4, 2, 12, 20, D, 267 + D, ATTNGEN_MASK_CAUSAL);
    set_txl(a);
    CHECK_MATCHES_REFERENCE(a);
    AttnCase b = base_case(2, 4, 1, 1, 18, D, 268 + D, ATTNGEN_MASK_CAUSAL);
    set_txl(b);
    CHECK_MATCHES_REFERENCE(b);
}

TEST_CASE("txl: sliding window and kv padding", "[schemes][txl][padding]") {
    AttnCase a = base_case(2, 2, 2, 10, 15, 16, 269, ATTNGEN_MASK_SLIDING_WINDOW);
    a.window = 6;
    a.kv_lengths = {15, 8};
    set_txl(a);
    CHECK_MATCHES_REFERENCE(a);
}

TEST_CASE("txl: memory prefix consistency (decode and chunk equal the full run)", "[schemes][txl][property]") {
    AttnCase a = base_case(1, 2, 2, 21, 21, 16, 270, ATTNGEN_MASK_CAUSAL);
    set_txl(a);
    check_bottom_right_consistency(a);
}

TEST_CASE("txl: random shapes, masks, padding and parameters (seeded sweep)", "[schemes][txl][sweep]") {
    for (uint64_t seed = 1; seed <= 100; seed++) {
        AttnCase c = random_case(5000 + seed, {5, 16, 33, 64, 128});
        set_random_scheme(c, ATTNGEN_SCHEME_TXL, seed);
        CHECK_MATCHES_REFERENCE(c);
    }
}

// =================================================================================================
// DeBERTa
// =================================================================================================

TEST_CASE("deberta: span 8 without buckets", "[schemes][deberta]") {
    AttnCase a = base_case(2, 2, 2, 7, 7, 8, 280, ATTNGEN_MASK_NONE);
    set_deberta(a, 8);
    CHECK_MATCHES_REFERENCE(a);
}

TEST_CASE("deberta: relative distances beyond the span are clamped", "[schemes][deberta]") {
    AttnCase a = base_case(1, 4, 4, 33, 33, 16, 281, ATTNGEN_MASK_NONE);
    set_deberta(a, 16);
    CHECK_MATCHES_REFERENCE(a);
    AttnCase b = base_case(1, 2, 2, 20, 20, 16, 282, ATTNGEN_MASK_NONE);
    set_deberta(b, 2);
    CHECK_MATCHES_REFERENCE(b);
}

TEST_CASE("deberta: log buckets (8, 32) active", "[schemes][deberta]") {
    AttnCase a = base_case(1, 4, 4, 33, 33, 16, 283, ATTNGEN_MASK_NONE);
    set_deberta(a, 8, 8, 32);
    CHECK_MATCHES_REFERENCE(a);
    AttnCase b = base_case(1, 2, 2, 80, 80, 8, 284, ATTNGEN_MASK_NONE);  // beyond max_position
    set_deberta(b, 8, 8, 32);
    CHECK_MATCHES_REFERENCE(b);
}

TEST_CASE("deberta: v3 settings (buckets 256, max position 512)", "[schemes][deberta]") {
    AttnCase a = base_case(2, 2, 2, 9, 9, 32, 285, ATTNGEN_MASK_NONE);
    set_deberta(a, 256, 256, 512);
    CHECK_MATCHES_REFERENCE(a);
}

TEST_CASE("deberta: causal, chunked and decode", "[schemes][deberta][causal][decode]") {
    AttnCase a = base_case(1, 2, 2, 15, 15, 16, 286, ATTNGEN_MASK_CAUSAL);
    set_deberta(a, 4, 0, 0);
    CHECK_MATCHES_REFERENCE(a);
    AttnCase b = base_case(2, 2, 2, 5, 18, 16, 287, ATTNGEN_MASK_CAUSAL);
    set_deberta(b, 8, 8, 32);
    CHECK_MATCHES_REFERENCE(b);
    AttnCase c = base_case(2, 2, 2, 1, 40, 16, 288, ATTNGEN_MASK_NONE);
    set_deberta(c, 8, 8, 32);
    CHECK_MATCHES_REFERENCE(c);
}

TEST_CASE("deberta: GQA and head dims", "[schemes][deberta][gqa][head_dim]") {
    const int D = GENERATE(64, 128, 9);
    AttnCase a = base_case(1, 4, 2, 13, 13, D, 289 + D, ATTNGEN_MASK_NONE);
    set_deberta(a, 4);
    CHECK_MATCHES_REFERENCE(a);
    AttnCase b = base_case(2, 4, 1, 1, 21, D, 290 + D, ATTNGEN_MASK_CAUSAL);
    set_deberta(b, 8, 8, 32);
    CHECK_MATCHES_REFERENCE(b);
}

TEST_CASE("deberta: explicit scale and kv padding", "[schemes][deberta][padding]") {
    AttnCase a = base_case(2, 2, 2, 11, 11, 16, 291, ATTNGEN_MASK_NONE);
    set_deberta(a, 6);
    a.scale = 0.3f;
    a.kv_lengths = {4, 11};
    CHECK_MATCHES_REFERENCE(a);
}

// Several query tiles and key chunks: each tile computes c2p (and the call p2c) only for the table rows
// its visible distances reach, so the rows differ per tile; windows, padding and Lq != Lk move them.
TEST_CASE("deberta: long sequences (per-tile table rows, windows, padding)", "[schemes][deberta][long]") {
    AttnCase log_buckets = base_case(1, 2, 2, 300, 520, 16, 293, ATTNGEN_MASK_NONE);
    set_deberta(log_buckets, 64, 32, 128);  // saturates beyond |p_i - j| >= 127
    CHECK_MATCHES_REFERENCE(log_buckets);
    AttnCase bottom_right = base_case(1, 2, 1, 200, 450, 64, 294, ATTNGEN_MASK_CAUSAL);
    set_deberta(bottom_right, 48);
    CHECK_MATCHES_REFERENCE(bottom_right);
    AttnCase window = base_case(2, 2, 2, 260, 260, 16, 295, ATTNGEN_MASK_SLIDING_WINDOW);
    window.window = 40;
    window.kv_lengths = {260, 190};
    set_deberta(window, 32, 16, 64);
    CHECK_MATCHES_REFERENCE(window);
    AttnCase more_queries = base_case(1, 2, 2, 170, 90, 16, 296, ATTNGEN_MASK_CAUSAL);  // Lq > Lk
    more_queries.kv_lengths = {70};
    set_deberta(more_queries, 256, 256, 512);
    CHECK_MATCHES_REFERENCE(more_queries);
    AttnCase decode = base_case(2, 2, 1, 1, 1100, 64, 297, ATTNGEN_MASK_CAUSAL);
    decode.kv_lengths = {1100, 700};
    set_deberta(decode, 256, 256, 512);
    CHECK_MATCHES_REFERENCE(decode);
}

// Decode takes q + Qr[saturated row] as the query of a key chunk whose keys all lie at or beyond the last
// bucket (|p - j| >= max_position - 1, or the span without buckets); the chunk holding the nearer keys
// adds the terms per score. Chunks are 1024 keys at D = 64, 512 at D = 128, 2048 for other head dims.
TEST_CASE("deberta: decode folds saturated rows into the query", "[schemes][deberta][decode][long]") {
    AttnCase v3 = base_case(1, 4, 2, 1, 2600, 64, 298, ATTNGEN_MASK_CAUSAL);
    set_deberta(v3, 256, 256, 512);
    CHECK_MATCHES_REFERENCE(v3);
    AttnCase padded = base_case(2, 4, 4, 1, 1300, 128, 299, ATTNGEN_MASK_NONE);
    padded.kv_lengths = {1300, 600};
    set_deberta(padded, 64, 32, 128);
    CHECK_MATCHES_REFERENCE(padded);
    AttnCase no_buckets = base_case(1, 2, 1, 1, 2500, 40, 300, ATTNGEN_MASK_CAUSAL);
    set_deberta(no_buckets, 100);
    CHECK_MATCHES_REFERENCE(no_buckets);
    AttnCase window = base_case(1, 4, 1, 1, 3000, 64, 301, ATTNGEN_MASK_SLIDING_WINDOW);
    window.window = 1500;
    set_deberta(window, 32, 16, 64);
    CHECK_MATCHES_REFERENCE(window);
}

TEST_CASE("deberta: depends on relative position only (decode and chunk equal the full run)",
          "[schemes][deberta][property]") {
    AttnCase a = base_case(1, 2, 2, 25, 25, 16, 292, ATTNGEN_MASK_CAUSAL);
    set_deberta(a, 8, 8, 32);
    check_bottom_right_consistency(a);
}

TEST_CASE("deberta: random shapes, masks, padding and parameters (seeded sweep)", "[schemes][deberta][sweep]") {
    for (uint64_t seed = 1; seed <= 100; seed++) {
        AttnCase c = random_case(6000 + seed, {5, 16, 33, 64, 128});
        set_random_scheme(c, ATTNGEN_SCHEME_DEBERTA, seed);
        CHECK_MATCHES_REFERENCE(c);
    }
}

// =================================================================================================
// RoPE
// =================================================================================================

TEST_CASE("rope half: default frequencies (Llama)", "[schemes][rope]") {
    AttnCase a = base_case(2, 4, 4, 9, 9, 16, 300, ATTNGEN_MASK_CAUSAL);
    set_rope(a, ATTNGEN_ROPE_HALF);
    CHECK_MATCHES_REFERENCE(a);
    AttnCase b = base_case(1, 4, 2, 33, 33, 32, 301, ATTNGEN_MASK_CAUSAL);  // theta 5e5, GQA
    set_rope(b, ATTNGEN_ROPE_HALF, 0, 500000.0);
    CHECK_MATCHES_REFERENCE(b);
    AttnCase c = base_case(2, 2, 2, 7, 7, 8, 302, ATTNGEN_MASK_CAUSAL);
    set_rope(c, ATTNGEN_ROPE_HALF, 0, 500000.0);
    CHECK_MATCHES_REFERENCE(c);
    AttnCase d = base_case(1, 2, 2, 6, 6, 16, 303, ATTNGEN_MASK_NONE);
    set_rope(d, ATTNGEN_ROPE_HALF);
    CHECK_MATCHES_REFERENCE(d);
}

TEST_CASE("rope half: decode (MQA, D = 64)", "[schemes][rope][decode]") {
    AttnCase a = base_case(1, 4, 1, 1, 17, 64, 304, ATTNGEN_MASK_CAUSAL);
    set_rope(a, ATTNGEN_ROPE_HALF);
    CHECK_MATCHES_REFERENCE(a);
    AttnCase b = base_case(2, 2, 2, 1, 45, 128, 305, ATTNGEN_MASK_CAUSAL);
    set_rope(b, ATTNGEN_ROPE_HALF, 0, 500000.0);
    CHECK_MATCHES_REFERENCE(b);
}

TEST_CASE("rope half: partial rotary dims (NeoX)", "[schemes][rope]") {
    struct Dims {
        int D, rot;
    };
    for (const Dims &d : {Dims{32, 8}, Dims{64, 32}, Dims{128, 64}, Dims{13, 12}, Dims{16, 2}}) {
        AttnCase a = base_case(1, 2, 2, 11, 11, d.D, 306 + d.D + d.rot, ATTNGEN_MASK_CAUSAL);
        set_rope(a, ATTNGEN_ROPE_HALF, d.rot);
        CHECK_MATCHES_REFERENCE(a);
        AttnCase b = last_query_rows(a, 1);
        CHECK_MATCHES_REFERENCE(b);
    }
}

TEST_CASE("rope interleaved: GPT-J pairing, full and partial", "[schemes][rope]") {
    AttnCase a = base_case(2, 4, 4, 9, 9, 16, 310, ATTNGEN_MASK_CAUSAL);
    set_rope(a, ATTNGEN_ROPE_INTERLEAVED, 16);
    CHECK_MATCHES_REFERENCE(a);
    AttnCase b = base_case(1, 2, 2, 33, 33, 32, 311, ATTNGEN_MASK_CAUSAL);
    set_rope(b, ATTNGEN_ROPE_INTERLEAVED, 8);
    CHECK_MATCHES_REFERENCE(b);
    AttnCase c = base_case(1, 4, 4, 1, 17, 64, 312, ATTNGEN_MASK_CAUSAL);
    set_rope(c, ATTNGEN_ROPE_INTERLEAVED);
    CHECK_MATCHES_REFERENCE(c);
    AttnCase d = base_case(1, 4, 2, 10, 10, 128, 313, ATTNGEN_MASK_CAUSAL);
    set_rope(d, ATTNGEN_ROPE_INTERLEAVED, 96);
    CHECK_MATCHES_REFERENCE(d);
    // Decode: fp32 keys rotated inside the QK dot product, partial rotary (the unspecialized branch).
    CHECK_MATCHES_REFERENCE(last_query_rows(d, 1));
    AttnCase e = base_case(2, 2, 1, 7, 7, 15, 314, ATTNGEN_MASK_NONE);  // odd D, rot_dim 10
    set_rope(e, ATTNGEN_ROPE_INTERLEAVED, 10);
    CHECK_MATCHES_REFERENCE(e);
}

TEST_CASE("rope, xpos: multi-head decode folds the key rotation into q.k", "[schemes][rope][xpos][decode]") {
    // Fixed head_dim, fp32 keys, one query head per KV head: the query takes each key's transposed
    // rotation inside the product (Blocking::key_rotation_in_product). Two chunks, the last partial;
    // full and partial rotary (the unspecialized branch), both pairings; xPos's decayed rotation.
    for (int rot : {128, 96}) {
        for (attngen_rope_pairing pairing : {ATTNGEN_ROPE_HALF, ATTNGEN_ROPE_INTERLEAVED}) {
            AttnCase a = base_case(2, 3, 3, 1, 1100, 128, 316 + rot + int(pairing), ATTNGEN_MASK_CAUSAL);
            set_rope(a, pairing, rot);
            CHECK_MATCHES_REFERENCE(a);
        }
    }
    AttnCase b = base_case(1, 4, 4, 1, 1300, 128, 317, ATTNGEN_MASK_NONE);
    set_rope(b, ATTNGEN_ROPE_INTERLEAVED, 64);
    CHECK_MATCHES_REFERENCE(b);
    AttnCase c = base_case(2, 2, 2, 1, 1030, 64, 318, ATTNGEN_MASK_CAUSAL);
    set_xpos(c);
    CHECK_MATCHES_REFERENCE(c);
}

TEST_CASE("rope: half and interleaved pairings differ", "[schemes][rope]") {
    AttnCase a = base_case(1, 2, 2, 9, 9, 16, 315, ATTNGEN_MASK_CAUSAL);
    set_rope(a, ATTNGEN_ROPE_HALF);
    AttnCase b = a;
    b.rope.pairing = ATTNGEN_ROPE_INTERLEAVED;
    std::vector<float> half, inter;
    REQUIRE(run_attngen(a, half).ok());
    REQUIRE(run_attngen(b, inter).ok());
    CHECK_FALSE(compare(half, inter, 1e-3, 0).ok);
    CHECK_MATCHES_REFERENCE(b);
}

TEST_CASE("rope: linear scaling", "[schemes][rope][scaling]") {
    AttnCase a = base_case(1, 2, 2, 9, 9, 16, 320, ATTNGEN_MASK_CAUSAL);
    set_rope(a, ATTNGEN_ROPE_HALF);
    a.rope.scaling = ATTNGEN_ROPE_SCALING_LINEAR;
    a.rope.factor = 4.0;
    CHECK_MATCHES_REFERENCE(a);
    AttnCase b = base_case(1, 2, 2, 1, 30, 32, 321, ATTNGEN_MASK_CAUSAL);
    set_rope(b, ATTNGEN_ROPE_INTERLEAVED, 16);
    b.rope.scaling = ATTNGEN_ROPE_SCALING_LINEAR;
    b.rope.factor = 2.5;
    CHECK_MATCHES_REFERENCE(b);
}

TEST_CASE("rope: dynamic NTK scaling", "[schemes][rope][scaling]") {
    // seq_len 33 > max_position_embeddings 16: the base grows.
    AttnCase a = base_case(1, 2, 2, 33, 33, 16, 322, ATTNGEN_MASK_CAUSAL);
    set_rope(a, ATTNGEN_ROPE_HALF);
    a.rope.scaling = ATTNGEN_ROPE_SCALING_DYNAMIC_NTK;
    a.rope.factor = 2.0;
    a.rope.max_position_embeddings = 16;
    CHECK_MATCHES_REFERENCE(a);
    // seq_len <= max_position_embeddings: default frequencies.
    AttnCase b = a;
    b.rope.max_position_embeddings = 64;
    CHECK_MATCHES_REFERENCE(b);
    AttnCase plain = a;
    plain.rope.scaling = ATTNGEN_ROPE_SCALING_NONE;
    std::vector<float> out_b, out_plain, out_a;
    REQUIRE(run_attngen(b, out_b).ok());
    REQUIRE(run_attngen(plain, out_plain).ok());
    REQUIRE(run_attngen(a, out_a).ok());
    CHECK_CLOSE(out_b, out_plain, 1e-6, 1e-6);
    CHECK_FALSE(compare(out_a, out_plain, 1e-4, 0).ok);
    // Decode: seq_len comes from the largest position id (explicit ids).
    AttnCase c = base_case(2, 2, 1, 1, 20, 32, 323, ATTNGEN_MASK_CAUSAL);
    set_rope(c, ATTNGEN_ROPE_HALF);
    c.rope.scaling = ATTNGEN_ROPE_SCALING_DYNAMIC_NTK;
    c.rope.factor = 3.0;
    c.rope.max_position_embeddings = 24;
    c.k_positions = shifted_positions(2, 20, 0, 10);
    c.q_positions = {29, 29};
    CHECK_MATCHES_REFERENCE(c);
}

TEST_CASE("rope: llama3 scaling", "[schemes][rope][scaling]") {
    // Small original context so that every wavelength band occurs at D = 16.
    AttnCase a = base_case(1, 2, 2, 20, 20, 16, 324, ATTNGEN_MASK_CAUSAL);
    set_rope(a, ATTNGEN_ROPE_HALF);
    a.rope.scaling = ATTNGEN_ROPE_SCALING_LLAMA3;
    a.rope.factor = 8.0;
    a.rope.low_freq_factor = 1.0;
    a.rope.high_freq_factor = 4.0;
    a.rope.original_max_position_embeddings = 64;
    CHECK_MATCHES_REFERENCE(a);
    // Llama 3.1 settings at positions 4000..4008 (float32 angles: atol 2e-3 as in the contract).
    AttnCase b = base_case(1, 2, 2, 9, 9, 64, 325, ATTNGEN_MASK_CAUSAL);
    set_rope(b, ATTNGEN_ROPE_HALF, 0, 500000.0);
    b.rope.scaling = ATTNGEN_ROPE_SCALING_LLAMA3;
    b.rope.factor = 8.0;
    b.rope.low_freq_factor = 1.0;
    b.rope.high_freq_factor = 4.0;
    b.rope.original_max_position_embeddings = 8192;
    b.q_positions = shifted_positions(1, 9, 0, 4000);
    b.k_positions = shifted_positions(1, 9, 0, 4000);
    CHECK_MATCHES_REFERENCE_TOL(b, 2e-3, 1e-4);
    AttnCase c = base_case(2, 4, 2, 1, 12, 64, 326, ATTNGEN_MASK_CAUSAL);
    c.rope = b.rope;
    c.scheme = ATTNGEN_SCHEME_ROPE;
    c.k_positions = shifted_positions(2, 12, 0, 8180);
    c.q_positions = {8191, 8191};
    CHECK_MATCHES_REFERENCE_TOL(c, 2e-3, 1e-4);
}

TEST_CASE("rope: yarn scaling (attention factor)", "[schemes][rope][scaling]") {
    AttnCase a = base_case(1, 2, 2, 17, 17, 32, 327, ATTNGEN_MASK_CAUSAL);
    set_rope(a, ATTNGEN_ROPE_HALF);
    a.rope.scaling = ATTNGEN_ROPE_SCALING_YARN;
    a.rope.factor = 4.0;
    a.rope.original_max_position_embeddings = 64;
    CHECK_MATCHES_REFERENCE(a);
    AttnCase b = a;
    b.rope.attention_factor = 1.3;
    b.rope.beta_fast = 16;
    b.rope.beta_slow = 2;
    CHECK_MATCHES_REFERENCE(b);
    AttnCase c = last_query_rows(b, 1);
    c.rope.pairing = ATTNGEN_ROPE_INTERLEAVED;
    CHECK_MATCHES_REFERENCE(c);
}

TEST_CASE("rope: explicit position ids per batch", "[schemes][rope]") {
    AttnCase a = base_case(2, 2, 2, 6, 10, 16, 330, ATTNGEN_MASK_CAUSAL);
    set_rope(a, ATTNGEN_ROPE_HALF);
    a.k_positions = {0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 100, 102, 104, 106, 108, 110, 112, 114, 116, 118};
    a.q_positions = {4, 5, 6, 7, 8, 9, 108, 110, 112, 114, 116, 118};
    CHECK_MATCHES_REFERENCE(a);
    AttnCase b = a;
    b.rope.pairing = ATTNGEN_ROPE_INTERLEAVED;
    b.q_positions = {3, 3, 3, 3, 3, 3, 7, 1, 0, 9, 2, 5};  // arbitrary ids; the mask still uses indices
    CHECK_MATCHES_REFERENCE(b);
}

TEST_CASE("rope: sliding window, kv padding and chunked prefill", "[schemes][rope][padding]") {
    AttnCase a = base_case(2, 4, 2, 7, 19, 16, 331, ATTNGEN_MASK_SLIDING_WINDOW);
    a.window = 5;
    a.kv_lengths = {19, 10};
    set_rope(a, ATTNGEN_ROPE_HALF);
    CHECK_MATCHES_REFERENCE(a);
}

TEST_CASE("rope: scores depend only on i - j (common position shift leaves the output unchanged)",
          "[schemes][rope][property]") {
    for (attngen_rope_pairing pairing : {ATTNGEN_ROPE_HALF, ATTNGEN_ROPE_INTERLEAVED}) {
        AttnCase a = base_case(2, 2, 2, 12, 12, 32, 332, ATTNGEN_MASK_CAUSAL);
        set_rope(a, pairing);
        AttnCase shifted = a;
        shifted.q_positions = shifted_positions(2, 12, 0, 37);
        shifted.k_positions = shifted_positions(2, 12, 0, 37);
        AttnCase keys_only = a;  // not a common shift: the output must change
        keys_only.k_positions = shifted_positions(2, 12, 0, 5);
        std::vector<float> out_a, out_shifted, out_keys;
        REQUIRE(run_attngen(a, out_a).ok());
        REQUIRE(run_attngen(shifted, out_shifted).ok());
        REQUIRE(run_attngen(keys_only, out_keys).ok());
        CHECK_CLOSE(out_shifted, out_a, 2e-5, 1e-4);
        CHECK_FALSE(compare(out_keys, out_a, 1e-3, 0).ok);
        CHECK_CLOSE(out_shifted, reference_output(shifted), kAtol, kRtol);
    }
}

TEST_CASE("rope: random shapes, masks, padding and parameters (seeded sweep)", "[schemes][rope][sweep]") {
    for (uint64_t seed = 1; seed <= 100; seed++) {
        AttnCase c = random_case(7000 + seed, {6, 16, 17, 64, 128});
        set_random_scheme(c, ATTNGEN_SCHEME_ROPE, seed);
        CHECK_MATCHES_REFERENCE(c);
    }
}

TEST_CASE("rope and xpos: several query tiles per (head, batch) pair, pairs that do and do not share out",
          "[schemes][rope][xpos][tiles]") {
    // Prefill runs a pair's query tiles in order in one task (its keys rotated once), or as nested
    // parallel tasks where the pairs do not share out over the threads: 1, 3 and 8 pairs cover both
    // with 2 threads and with 3 (ctest rope_xpos_tests_3_threads); rows and keys span several tiles.
    struct Shape {
        int batch, heads, kv_heads, q_len, k_len, head_dim;
        attngen_mask mask;
    };
    uint64_t seed = 360;
    for (const Shape &s :
         {Shape{1, 3, 3, 200, 200, 64, ATTNGEN_MASK_CAUSAL}, Shape{2, 4, 2, 150, 260, 64, ATTNGEN_MASK_NONE},
          Shape{1, 1, 1, 130, 130, 128, ATTNGEN_MASK_CAUSAL}, Shape{1, 3, 1, 190, 70, 40, ATTNGEN_MASK_CAUSAL}}) {
        AttnCase rope = base_case(s.batch, s.heads, s.kv_heads, s.q_len, s.k_len, s.head_dim, seed++, s.mask);
        set_rope(rope, ATTNGEN_ROPE_HALF);
        CHECK_MATCHES_REFERENCE(rope);
        AttnCase xpos = base_case(s.batch, s.heads, s.kv_heads, s.q_len, s.k_len, s.head_dim, seed++, s.mask);
        set_xpos(xpos);
        CHECK_MATCHES_REFERENCE(xpos);
    }
}

// =================================================================================================
// xPos
// =================================================================================================

TEST_CASE("xpos: causal prefill", "[schemes][xpos]") {
    AttnCase a = base_case(1, 2, 2, 9, 9, 16, 340, ATTNGEN_MASK_CAUSAL);
    set_xpos(a);
    CHECK_MATCHES_REFERENCE(a);
    AttnCase b = base_case(2, 2, 2, 33, 33, 32, 341, ATTNGEN_MASK_CAUSAL);
    set_xpos(b);
    CHECK_MATCHES_REFERENCE(b);
    AttnCase c = base_case(2, 4, 4, 7, 7, 8, 342, ATTNGEN_MASK_CAUSAL);
    set_xpos(c);
    CHECK_MATCHES_REFERENCE(c);
}

TEST_CASE("xpos: decode", "[schemes][xpos][decode]") {
    AttnCase a = base_case(1, 4, 4, 1, 17, 64, 343, ATTNGEN_MASK_CAUSAL);
    set_xpos(a);
    CHECK_MATCHES_REFERENCE(a);
    AttnCase b = base_case(2, 4, 2, 1, 40, 128, 344, ATTNGEN_MASK_CAUSAL);
    set_xpos(b);
    CHECK_MATCHES_REFERENCE(b);
}

TEST_CASE("rope and xpos: decode with grouped query heads over several key chunks",
          "[schemes][rope][xpos][decode][gqa]") {
    // Decode runs the query heads of a KV group together: with fp32 keys and D = 64 or 128 the kernel
    // holds two copies, one that rotates keys inside the dot product (multi-head: one head per KV
    // head) and one that rotates each key chunk once for the group's heads (GQA, MQA); split-K
    // schedules run the heads one after another per chunk. Groups of 3 and of 4 (MQA), groups of one,
    // several chunks with a partial last one, key counts that are not a multiple of the block, and
    // padded batches.
    const int D = GENERATE(64, 128);
    AttnCase a = base_case(2, 6, 2, 1, 1300, D, 347 + D, ATTNGEN_MASK_CAUSAL);
    a.kv_lengths = {1300, 701};
    set_rope(a, ATTNGEN_ROPE_INTERLEAVED);
    CHECK_MATCHES_REFERENCE(a);
    AttnCase b = base_case(1, 4, 1, 1, 1100, D, 348 + D, ATTNGEN_MASK_NONE);
    set_xpos(b);
    CHECK_MATCHES_REFERENCE(b);
    AttnCase c = base_case(2, 8, 2, 1, 1037, D, 349 + D, ATTNGEN_MASK_CAUSAL);
    c.kv_lengths = {1037, 19};
    set_rope(c, ATTNGEN_ROPE_HALF);
    CHECK_MATCHES_REFERENCE(c);
    // Multi-head attention (one query head per KV head) through the same kernels.
    for (int n = 0; n < 3; n++) {
        const int batch = n == 0 ? 2 : 1, heads = n == 0 ? 3 : 2, keys = n == 0 ? 1037 : n == 1 ? 777 : 530;
        AttnCase mha =
            base_case(batch, heads, heads, 1, keys, D, 350 + n + D, n == 1 ? ATTNGEN_MASK_NONE : ATTNGEN_MASK_CAUSAL);
        if (n == 0) mha.kv_lengths = {600, 1037};
        if (n == 1) {
            set_xpos(mha);
        } else {
            set_rope(mha, n == 0 ? ATTNGEN_ROPE_INTERLEAVED : ATTNGEN_ROPE_HALF);
        }
        CHECK_MATCHES_REFERENCE(mha);
    }
}

TEST_CASE("decode: query heads in blocks of a KV group, every scheme", "[schemes][decode][gqa]") {
    // With D = 64 or 128, decode kernels hold a copy in which a tile is a block of 4 query heads of one
    // KV group (each key and value loaded once for the block); it runs where 4 divides the group. Groups
    // of 4 (one block a task), 8 (two blocks a task), 12 (tasks of one block) and 16 (MQA), and of 2,
    // which the multi-head copy serves; padded batches and every mask. A chunk's keys are read in
    // interleaved runs (schedules/cpu_attention.cpp): 37 keys end inside the first run.
    struct Layout {
        int batch, heads, kv_heads, keys;
        attngen_mask mask;
    };
    const Layout layouts[] = {
        {2, 8, 2, 1100, ATTNGEN_MASK_CAUSAL},         {1, 16, 2, 700, ATTNGEN_MASK_NONE},
        {1, 12, 1, 530, ATTNGEN_MASK_SLIDING_WINDOW}, {1, 16, 1, 300, ATTNGEN_MASK_CAUSAL},
        {1, 6, 3, 300, ATTNGEN_MASK_CAUSAL},          {1, 8, 2, 37, ATTNGEN_MASK_NONE},
    };
    const int D = GENERATE(64, 128);
    uint64_t seed = 1900 + D;
    for (const attngen_scheme scheme : kBuiltInSchemes) {
        for (const Layout &layout : layouts) {
            AttnCase c = base_case(layout.batch, layout.heads, layout.kv_heads, 1, layout.keys, D, seed++, layout.mask);
            if (layout.batch == 2) c.kv_lengths = {layout.keys, 613};
            if (layout.mask == ATTNGEN_MASK_SLIDING_WINDOW) c.window = 200;
            if (scheme != ATTNGEN_SCHEME_SDPA) set_random_scheme(c, scheme, seed++);
            CHECK_MATCHES_REFERENCE(c);
        }
    }
}

TEST_CASE("xpos: GQA, head dims, non-causal and chunked", "[schemes][xpos][gqa][head_dim]") {
    const int D = GENERATE(64, 128, 18);
    AttnCase a = base_case(1, 4, 2, 14, 14, D, 345 + D, ATTNGEN_MASK_CAUSAL);
    set_xpos(a);
    CHECK_MATCHES_REFERENCE(a);
    AttnCase b = base_case(1, 2, 1, 5, 16, D, 346 + D, ATTNGEN_MASK_NONE);
    set_xpos(b);
    CHECK_MATCHES_REFERENCE(b);
}

TEST_CASE("xpos: explicit centre, scale base, positions and padding", "[schemes][xpos]") {
    AttnCase a = base_case(2, 2, 2, 10, 10, 16, 347, ATTNGEN_MASK_CAUSAL);
    set_xpos(a, 64.0);
    a.xpos_centre_set = true;
    a.xpos_centre = -3;
    a.kv_lengths = {10, 6};
    CHECK_MATCHES_REFERENCE(a);
    AttnCase b = base_case(1, 2, 2, 6, 6, 16, 348, ATTNGEN_MASK_CAUSAL);
    set_xpos(b, 32.0);
    b.q_positions = shifted_positions(1, 6, 0, 20);
    b.k_positions = shifted_positions(1, 6, 0, 20);
    CHECK_MATCHES_REFERENCE(b);
}

TEST_CASE("xpos: the centre cancels in the scores", "[schemes][xpos][property]") {
    AttnCase a = base_case(1, 2, 2, 12, 12, 16, 349, ATTNGEN_MASK_CAUSAL);
    set_xpos(a, 64.0);
    AttnCase b = a;
    b.xpos_centre_set = true;
    b.xpos_centre = 17;
    std::vector<float> out_a, out_b;
    REQUIRE(run_attngen(a, out_a).ok());
    REQUIRE(run_attngen(b, out_b).ok());
    CHECK_CLOSE(out_b, out_a, 1e-5, 1e-4);
    CHECK_MATCHES_REFERENCE(b);
}

TEST_CASE("xpos: random shapes, masks, padding and parameters (seeded sweep)", "[schemes][xpos][sweep]") {
    for (uint64_t seed = 1; seed <= 100; seed++) {
        AttnCase c = random_case(8000 + seed, {8, 16, 30, 64, 128});
        set_random_scheme(c, ATTNGEN_SCHEME_XPOS, seed);
        CHECK_MATCHES_REFERENCE(c);
    }
}

// =================================================================================================
// Every scheme over windows and padding that span several key chunks
// =================================================================================================

TEST_CASE("schemes: sliding windows and padding across key chunks", "[schemes][mask][padding]") {
    // Kernels compute only the chunks and 16-key groups a query tile can see; each scheme's helper
    // stages (bias tables, relative products, Shaw's value histogram) must follow those ranges.
    const attngen_scheme schemes[] = {ATTNGEN_SCHEME_ALIBI, ATTNGEN_SCHEME_T5,      ATTNGEN_SCHEME_SHAW,
                                      ATTNGEN_SCHEME_TXL,   ATTNGEN_SCHEME_DEBERTA, ATTNGEN_SCHEME_ROPE,
                                      ATTNGEN_SCHEME_XPOS};
    uint64_t seed = 500;
    for (attngen_scheme scheme : schemes) {
        AttnCase window = base_case(2, 2, 1, 150, 420, 64, seed++, ATTNGEN_MASK_SLIDING_WINDOW);
        window.window = 90;
        window.kv_lengths = {420, 300};
        set_random_scheme(window, scheme, seed++);
        CHECK_MATCHES_REFERENCE(window);
        AttnCase padded = base_case(2, 2, 2, 1, 700, 64, seed++, ATTNGEN_MASK_CAUSAL);  // decode
        padded.kv_lengths = {700, 200};
        set_random_scheme(padded, scheme, seed++);
        CHECK_MATCHES_REFERENCE(padded);
    }
}

// =================================================================================================
// A KV cache of transformed keys (desc.keys_rotated)
// =================================================================================================

namespace {

// Fills the case's keys the way a KV cache would (attngen_rope, or attngen_xpos with downscale, at
// the key positions, with the dynamic-NTK length of the whole call) and checks that the call with
// keys_rotated equals the fused kernel on the raw keys and the reference.
void check_rotated_key_cache(const AttnCase &raw) {
    INFO(raw.describe());
    std::vector<float> fused;
    REQUIRE(run_attngen(raw, fused).ok());
    AttnCase cached = raw;
    cached.keys_rotated = true;
    const Tensor k_in = k_tensor(raw),
                 k_out = tensor(cached.k.data(), {raw.batch, raw.kv_heads, raw.k_len, raw.head_dim});
    const Tensor positions =
        raw.k_positions.empty() ? Tensor{} : tensor(raw.k_positions.data(), {raw.batch, raw.k_len});
    int32_t max_position = std::max(raw.k_len - 1, 0);
    for (int32_t p : raw.q_positions)
        max_position = std::max(max_position, p);
    for (int32_t p : raw.k_positions)
        max_position = std::max(max_position, p);
    char error[512] = "";
    const attngen_tensor *given = raw.k_positions.empty() ? nullptr : &positions;
    const attngen_status st =
        raw.scheme == ATTNGEN_SCHEME_ROPE
            ? attngen_rope(&k_in, given, &raw.rope, max_position + 1, &k_out, error, sizeof error)
            : attngen_xpos(&k_in, given, raw.xpos_scale_base, raw.xpos_centre, 1, &k_out, error, sizeof error);
    INFO(error);
    REQUIRE(st == ATTNGEN_OK);
    REQUIRE(cached.k != raw.k);
    std::vector<float> out;
    RunInfo info;
    const Status status = run_attngen(cached, out, &info);
    INFO(status.message);
    REQUIRE(status.ok());
    CHECK(std::string(info.kernel).find("sdpa") != std::string::npos);  // plain attention ran
    CHECK_CLOSE(out, fused, 2e-5, 1e-4);
    CHECK_CLOSE(out, reference_output(raw), kAtol, kRtol);
}

}  // namespace

TEST_CASE("rope and xpos over a cache of rotated keys equal the fused kernel", "[schemes][rope][xpos][cache]") {
    AttnCase a = base_case(1, 4, 1, 1, 37, 64, 390, ATTNGEN_MASK_CAUSAL);  // decode, MQA
    set_rope(a, ATTNGEN_ROPE_HALF);
    check_rotated_key_cache(a);
    AttnCase b = base_case(2, 4, 2, 9, 9, 32, 391, ATTNGEN_MASK_CAUSAL);  // prefill, GQA, partial rotary
    set_rope(b, ATTNGEN_ROPE_HALF, 16);
    b.q_positions = shifted_positions(2, 9, 0, 5);
    b.k_positions = shifted_positions(2, 9, 0, 5);
    check_rotated_key_cache(b);
    AttnCase c = base_case(2, 2, 2, 1, 45, 128, 392, ATTNGEN_MASK_CAUSAL);  // interleaved, kv padding
    set_rope(c, ATTNGEN_ROPE_INTERLEAVED);
    c.kv_lengths = {45, 20};
    check_rotated_key_cache(c);
    AttnCase d = base_case(1, 2, 2, 1, 70, 64, 393, ATTNGEN_MASK_SLIDING_WINDOW);  // YaRN, window
    set_rope(d, ATTNGEN_ROPE_HALF);
    d.window = 16;
    d.rope.scaling = ATTNGEN_ROPE_SCALING_YARN;
    d.rope.factor = 4.0;
    d.rope.original_max_position_embeddings = 32;
    check_rotated_key_cache(d);
    AttnCase e = base_case(1, 4, 2, 1, 33, 64, 394, ATTNGEN_MASK_CAUSAL);  // xPos decode
    set_xpos(e, 64.0);
    e.xpos_centre_set = true;
    e.xpos_centre = -16;
    check_rotated_key_cache(e);
    AttnCase f = base_case(2, 2, 2, 12, 12, 16, 395, ATTNGEN_MASK_CAUSAL);  // xPos prefill
    set_xpos(f, 512.0);
    f.xpos_centre_set = true;
    f.xpos_centre = -6;
    check_rotated_key_cache(f);
    // One sequence of 150 keys: the kernels tabulate (cos, sin) in blocks of 64 positions, the last partial.
    AttnCase g = base_case(1, 2, 1, 1, 150, 64, 398, ATTNGEN_MASK_CAUSAL);  // xPos decode
    set_xpos(g, 512.0);
    g.xpos_centre_set = true;
    g.xpos_centre = -75;
    check_rotated_key_cache(g);
    AttnCase h = base_case(1, 2, 2, 150, 150, 64, 399, ATTNGEN_MASK_CAUSAL);  // RoPE prefill
    set_rope(h, ATTNGEN_ROPE_INTERLEAVED);
    check_rotated_key_cache(h);
}

TEST_CASE("keys_rotated: invalid uses are rejected with a reason", "[schemes][cache][validation]") {
    AttnCase a = base_case(1, 2, 2, 1, 8, 16, 396, ATTNGEN_MASK_CAUSAL);
    std::vector<float> out;
    auto expect_invalid_with_rotated_keys = [&](const std::string &reason) {
        a.keys_rotated = true;
        const Status s = run_attngen(a, out);
        CHECK(s.code == ATTNGEN_ERROR_INVALID_ARGUMENT);
        CHECK_THAT(s.message, Catch::Contains(reason));
    };
    SECTION("a scheme that does not transform keys") {
        set_alibi(a);
        expect_invalid_with_rotated_keys("only rope and xpos");
    }
    SECTION("xpos without an explicit centre") {
        set_xpos(a);
        expect_invalid_with_rotated_keys("xpos_centre_set");
    }
    SECTION("a flag other than 0 or 1") {
        set_rope(a, ATTNGEN_ROPE_HALF);
        attngen_attention_desc desc = make_desc(a);
        desc.keys_rotated = 2;
        out.assign(a.q_size(), 0.f);
        const Tensor q = q_tensor(a), k = k_tensor(a), v = v_tensor(a), o = out_tensor(a, out);
        char error[512] = "";
        CHECK(attngen_attention(&q, &k, &v, &o, &desc, nullptr, error, sizeof error) == ATTNGEN_ERROR_INVALID_ARGUMENT);
        CHECK_THAT(std::string(error), Catch::Contains("desc.keys_rotated is 2"));
    }
}

// =================================================================================================
// Properties of the positional encodings
// =================================================================================================

TEST_CASE("sinusoid: PE(p + k) is a fixed rotation of PE(p) per frequency", "[schemes][sinusoid][property]") {
    const int d = 16, length = 64;
    std::vector<float> table(std::size_t(length) * d);
    char error[256];
    const Tensor out = tensor(table.data(), {length, d});
    REQUIRE(attngen_sinusoid_table(ATTNGEN_SINUSOID_PAPER, d, 0, 10000.0, &out, error, sizeof error) == ATTNGEN_OK);
    auto pe = [&](int p, int c) { return double(table[std::size_t(p) * d + c]); };
    for (int k : {1, 3, 10, 25}) {
        double worst = 0;
        for (int p = 0; p + k < length; p++) {
            for (int i = 0; i < d / 2; i++) {
                // [sin((p+k)w); cos((p+k)w)] = [[cos kw, sin kw], [-sin kw, cos kw]] [sin pw; cos pw],
                // with sin kw = PE(k)[2i] and cos kw = PE(k)[2i+1]: the map depends on k only.
                const double sk = pe(k, 2 * i), ck = pe(k, 2 * i + 1);
                const double s = pe(p, 2 * i), c = pe(p, 2 * i + 1);
                worst = std::max(worst, std::fabs(pe(p + k, 2 * i) - (ck * s + sk * c)));
                worst = std::max(worst, std::fabs(pe(p + k, 2 * i + 1) - (-sk * s + ck * c)));
            }
        }
        INFO("k=" << k << " worst deviation " << worst);
        CHECK(worst < 2e-6);
    }
    // Transformer-XL's concatenated [sin | cos] layout: the same rotation between columns i and i + d/2.
    std::vector<float> txl(std::size_t(length) * d);
    const Tensor txl_out = tensor(txl.data(), {length, d});
    REQUIRE(attngen_sinusoid_table(ATTNGEN_SINUSOID_TXL, d, 0, 10000.0, &txl_out, error, sizeof error) == ATTNGEN_OK);
    auto te = [&](int p, int c) { return double(txl[std::size_t(p) * d + c]); };
    for (int k : {2, 7, 31}) {
        double worst = 0;
        for (int p = 0; p + k < length; p++) {
            for (int i = 0; i < d / 2; i++) {
                const double sk = te(k, i), ck = te(k, i + d / 2), s = te(p, i), c = te(p, i + d / 2);
                worst = std::max(worst, std::fabs(te(p + k, i) - (ck * s + sk * c)));
                worst = std::max(worst, std::fabs(te(p + k, i + d / 2) - (-sk * s + ck * c)));
            }
        }
        INFO("txl k=" << k << " worst deviation " << worst);
        CHECK(worst < 2e-6);
    }
}

TEST_CASE("xpos: q.k decays as zeta^((n - m) / scale_base) times the rotated product", "[schemes][xpos][property]") {
    const int D = 16;
    const double scale_base = 64.0;
    const std::vector<float> q = random_floats(D, 350), k = random_floats(D, 351);
    auto xpos_at = [&](const std::vector<float> &x, int position, int centre, int downscale) {
        std::vector<float> out(D);
        std::vector<int32_t> pos = {position};
        char error[256];
        const Tensor tx = tensor(x.data(), {1, 1, 1, D}), tp = tensor(pos.data(), {1, 1}),
                     to = tensor(out.data(), {1, 1, 1, D});
        const attngen_status st = attngen_xpos(&tx, &tp, scale_base, centre, downscale, &to, error, sizeof error);
        INFO(error);
        REQUIRE(st == ATTNGEN_OK);
        return out;
    };
    auto rope_at = [&](const std::vector<float> &x, int position) {
        std::vector<float> out(D);
        std::vector<int32_t> pos = {position};
        char error[256];
        const attngen_rope_params params = rope_params(ATTNGEN_ROPE_INTERLEAVED);
        const Tensor tx = tensor(x.data(), {1, 1, 1, D}), tp = tensor(pos.data(), {1, 1}),
                     to = tensor(out.data(), {1, 1, 1, D});
        const attngen_status st = attngen_rope(&tx, &tp, &params, 0, &to, error, sizeof error);
        INFO(error);
        REQUIRE(st == ATTNGEN_OK);
        return out;
    };
    for (int centre : {-8, 5}) {
        for (auto [n, m] : {std::pair{10, 3}, std::pair{40, 0}, std::pair{7, 7}, std::pair{100, 60}}) {
            const std::vector<float> qx = xpos_at(q, n, centre, 0), kx = xpos_at(k, m, centre, 1);
            const std::vector<float> qr = rope_at(q, n), kr = rope_at(k, m);
            double got = 0, want = 0, undecayed = 0;
            for (int i = 0; i < D / 2; i++) {
                const double zeta = (2.0 * i + 0.4 * D) / (1.4 * D);
                const double pair = double(qr[2 * i]) * kr[2 * i] + double(qr[2 * i + 1]) * kr[2 * i + 1];
                want += std::pow(zeta, (n - m) / scale_base) * pair;
                undecayed += pair;
                got += double(qx[2 * i]) * kx[2 * i] + double(qx[2 * i + 1]) * kx[2 * i + 1];
            }
            INFO("centre=" << centre << " n=" << n << " m=" << m << " got " << got << " want " << want);
            CHECK(std::fabs(got - want) <= 1e-5 + 1e-5 * std::fabs(want));
            if (n != m) CHECK(std::fabs(want - undecayed) > 1e-4);  // the decay is visible
        }
    }
}

// =================================================================================================
// Standalone positional kernels
// =================================================================================================

namespace {

// attngen_rope on x [B,H,L,D] vs ref::rope_apply with the same frequencies.
void check_standalone_rope(int B, int H, int L, int D, const attngen_rope_params &params,
                           const std::vector<int32_t> &positions, uint64_t seed, int seq_len_hint = 0) {
    const std::vector<float> x = random_floats(std::size_t(B) * H * L * D, seed);
    std::vector<float> out(x.size(), std::numeric_limits<float>::quiet_NaN());
    const Tensor tx = tensor(x.data(), {B, H, L, D}), to = tensor(out.data(), {B, H, L, D});
    const Tensor tp = positions.empty() ? Tensor{} : tensor(positions.data(), {B, L});
    char error[512];
    const attngen_status st =
        attngen_rope(&tx, positions.empty() ? nullptr : &tp, &params, seq_len_hint, &to, error, sizeof error);
    INFO(error);
    REQUIRE(st == ATTNGEN_OK);

    ref::Problem p;
    p.batch = B;
    p.heads = H;
    p.kv_heads = 1;
    p.q_len = L;
    p.k_len = L;  // default query positions p_i = i
    p.head_dim = D;
    p.q = to_double(x);
    p.k.assign(std::size_t(B) * L * D, 0.0);
    p.v = p.k;
    ref::Rope r;
    r.pairing = params.pairing == ATTNGEN_ROPE_INTERLEAVED ? ref::Pairing::Interleaved : ref::Pairing::Half;
    r.rot_dim = params.rot_dim;
    r.q_positions = to_double(positions);
    int max_position = L - 1;
    for (int32_t v : positions)
        max_position = std::max(max_position, int(v));
    if (!positions.empty()) {
        max_position = 0;
        for (int32_t v : positions)
            max_position = std::max(max_position, int(v));
    }
    r.inv_freq = reference_inv_freq(params, D, std::max(max_position + 1, seq_len_hint), &r.attention_factor);
    CHECK_CLOSE(out, ref::rope_apply(p, r).q, kAtol, kRtol);
}

}  // namespace

TEST_CASE("standalone rope: half and interleaved, full and partial", "[schemes][rope][standalone]") {
    for (attngen_rope_pairing pairing : {ATTNGEN_ROPE_HALF, ATTNGEN_ROPE_INTERLEAVED}) {
        INFO("pairing " << int(pairing));
        attngen_rope_params params = rope_params(pairing);
        check_standalone_rope(2, 3, 17, 16, params, {}, 360);
        check_standalone_rope(1, 2, 9, 64, params, {}, 361);
        check_standalone_rope(1, 1, 5, 128, params, {}, 362);
        params.rot_dim = 8;
        check_standalone_rope(1, 2, 33, 32, params, {}, 363);
        params.rot_dim = 6;
        check_standalone_rope(2, 1, 4, 7, params, {}, 364);  // odd D, partial
        params = rope_params(pairing, 500000.0);
        check_standalone_rope(1, 2, 12, 32, params, {}, 365);
        check_standalone_rope(1, 2, 150, 64, params, {}, 379);  // tables in blocks of 64 positions
    }
}

TEST_CASE("standalone rope: explicit positions and scalings", "[schemes][rope][standalone]") {
    attngen_rope_params params = rope_params(ATTNGEN_ROPE_HALF);
    check_standalone_rope(2, 2, 5, 16, params, {7, 3, 100, 0, 42, 5, 6, 7, 8, 9}, 366);
    params.scaling = ATTNGEN_ROPE_SCALING_LINEAR;
    params.factor = 4;
    check_standalone_rope(1, 2, 9, 16, params, {}, 367);
    params.scaling = ATTNGEN_ROPE_SCALING_DYNAMIC_NTK;
    params.factor = 2;
    params.max_position_embeddings = 16;
    check_standalone_rope(1, 2, 33, 16, params, {}, 368);
    check_standalone_rope(1, 2, 8, 16, params, {}, 369, 40);  // seq_len_hint triggers the scaling
    params = rope_params(ATTNGEN_ROPE_INTERLEAVED, 500000.0);
    params.scaling = ATTNGEN_ROPE_SCALING_LLAMA3;
    params.factor = 8;
    params.low_freq_factor = 1;
    params.high_freq_factor = 4;
    params.original_max_position_embeddings = 256;
    check_standalone_rope(1, 2, 30, 64, params, {}, 370);
    params = rope_params(ATTNGEN_ROPE_HALF);
    params.scaling = ATTNGEN_ROPE_SCALING_YARN;
    params.factor = 4;
    params.original_max_position_embeddings = 64;
    check_standalone_rope(1, 2, 20, 32, params, {}, 371);
}

TEST_CASE("standalone rope and xpos: in-place and partial overlap", "[schemes][rope][xpos][standalone]") {
    // In place (a KV cache rotated where it lies) equals out of place, for head dims of one and of
    // several vectors, where a channel's partner lies in another vector.
    for (int D : {16, 64, 128}) {
        for (int op = 0; op < 3; op++) {
            INFO("D=" << D << " op=" << (op == 0 ? "rope half" : op == 1 ? "rope interleaved" : "xpos"));
            std::vector<float> x = random_floats(2 * 6 * std::size_t(D), 372 + D);
            const std::vector<float> original = x;
            std::vector<float> expected(x.size());
            const attngen_rope_params params = rope_params(op == 1 ? ATTNGEN_ROPE_INTERLEAVED : ATTNGEN_ROPE_HALF);
            char error[256];
            const Tensor tx = tensor(original.data(), {1, 2, 6, D}), te = tensor(expected.data(), {1, 2, 6, D});
            const Tensor in_place = tensor(x.data(), {1, 2, 6, D});
            auto apply = [&](const Tensor &in, const Tensor &out) {
                return op < 2 ? attngen_rope(&in, nullptr, &params, 0, &out, error, sizeof error)
                              : attngen_xpos(&in, nullptr, 512.0, -3, 1, &out, error, sizeof error);
            };
            REQUIRE(apply(tx, te) == ATTNGEN_OK);
            const attngen_status st = apply(in_place, in_place);
            INFO(error);
            REQUIRE(st == ATTNGEN_OK);
            CHECK_CLOSE(x, expected, 1e-6, 1e-6);
        }
    }
    const attngen_rope_params params = rope_params(ATTNGEN_ROPE_HALF);
    char error[256];
    // An output shifted by one row over its input is rejected.
    std::vector<float> buf(2 * 6 * 16 + 16, 0.f);
    const Tensor a = tensor(buf.data(), {1, 2, 6, 16}), b = tensor(buf.data() + 16, {1, 2, 6, 16});
    CHECK(attngen_rope(&a, nullptr, &params, 0, &b, error, sizeof error) == ATTNGEN_ERROR_INVALID_ARGUMENT);
    CHECK_THAT(std::string(error), Catch::Contains("overlap"));
}

namespace {

void check_standalone_xpos(int B, int H, int L, int D, double scale_base, int centre, bool downscale, uint64_t seed,
                           const std::vector<int32_t> &positions = {}) {
    const std::vector<float> x = random_floats(std::size_t(B) * H * L * D, seed);
    std::vector<float> out(x.size(), std::numeric_limits<float>::quiet_NaN());
    const Tensor tx = tensor(x.data(), {B, H, L, D}), to = tensor(out.data(), {B, H, L, D});
    const Tensor tp = positions.empty() ? Tensor{} : tensor(positions.data(), {B, L});
    char error[512];
    const attngen_status st = attngen_xpos(&tx, positions.empty() ? nullptr : &tp, scale_base, centre,
                                           downscale ? 1 : 0, &to, error, sizeof error);
    INFO(error);
    REQUIRE(st == ATTNGEN_OK);
    ref::Problem p;
    p.batch = B;
    p.heads = H;
    p.kv_heads = H;
    p.q_len = L;
    p.k_len = L;
    p.head_dim = D;
    p.q = to_double(x);
    p.k = p.q;
    p.v = p.q;
    ref::Xpos r;
    r.scale_base = scale_base;
    r.centre = centre;  // non-zero in every call below
    r.q_positions = to_double(positions);
    r.k_positions = to_double(positions);
    const ref::TransformedQK t = ref::xpos_apply(p, r);
    INFO("downscale " << downscale);
    CHECK_CLOSE(out, downscale ? t.k : t.q, kAtol, kRtol);
}

}  // namespace

TEST_CASE("standalone xpos: queries and keys (downscale) vs the reference", "[schemes][xpos][standalone]") {
    for (bool downscale : {false, true}) {
        check_standalone_xpos(1, 2, 9, 16, 512, -5, downscale, 380);  // torchscale centre -N//2 for N = 9
        check_standalone_xpos(2, 2, 33, 32, 512, -17, downscale, 381);
        check_standalone_xpos(1, 4, 17, 64, 64, -9, downscale, 382);
        check_standalone_xpos(1, 1, 4, 128, 16, 3, downscale, 383);
        check_standalone_xpos(2, 1, 3, 8, 100, -2, downscale, 384, {5, 9, 40, 0, 1, 2});
    }
}

namespace {

std::vector<float> run_sinusoid_table(attngen_sinusoid_convention conv, int channels, int offset, double base,
                                      int length) {
    const int columns = attngen_sinusoid_columns(conv, channels);
    std::vector<float> out(std::size_t(length) * columns, std::numeric_limits<float>::quiet_NaN());
    const Tensor to = tensor(out.data(), {length, columns});
    char error[512];
    const attngen_status st = attngen_sinusoid_table(conv, channels, offset, base, &to, error, sizeof error);
    INFO(error);
    REQUIRE(st == ATTNGEN_OK);
    return out;
}

ref::SinusoidConvention ref_convention(attngen_sinusoid_convention c) {
    return c == ATTNGEN_SINUSOID_PAPER ? ref::SinusoidConvention::PaperInterleaved
           : c == ATTNGEN_SINUSOID_T2T ? ref::SinusoidConvention::Tensor2TensorConcat
                                       : ref::SinusoidConvention::TransformerXLConcat;
}

}  // namespace

TEST_CASE("sinusoid table: the three conventions vs the reference", "[schemes][sinusoid][standalone]") {
    struct Shape {
        attngen_sinusoid_convention conv;
        int length, channels;
    };
    for (const Shape &s :
         {Shape{ATTNGEN_SINUSOID_PAPER, 16, 8}, Shape{ATTNGEN_SINUSOID_PAPER, 50, 128},
          Shape{ATTNGEN_SINUSOID_T2T, 16, 8}, Shape{ATTNGEN_SINUSOID_T2T, 50, 128}, Shape{ATTNGEN_SINUSOID_T2T, 17, 5},
          Shape{ATTNGEN_SINUSOID_T2T, 19, 2}, Shape{ATTNGEN_SINUSOID_TXL, 16, 8}, Shape{ATTNGEN_SINUSOID_TXL, 50, 128},
          Shape{ATTNGEN_SINUSOID_TXL, 17, 5}, Shape{ATTNGEN_SINUSOID_TXL, 20, 1}}) {
        INFO("convention " << int(s.conv) << " length " << s.length << " channels " << s.channels);
        CHECK(attngen_sinusoid_columns(s.conv, s.channels) ==
              ref::sinusoid_columns(ref_convention(s.conv), s.channels));
        const std::vector<float> got = run_sinusoid_table(s.conv, s.channels, 0, 10000.0, s.length);
        CHECK_CLOSE(got, ref::sinusoid_table(ref_convention(s.conv), s.length, s.channels), 1e-6, 1e-6);
    }
    CHECK(attngen_sinusoid_columns(ATTNGEN_SINUSOID_TXL, 5) == 6);
    CHECK(attngen_sinusoid_columns(ATTNGEN_SINUSOID_T2T, 5) == 5);
}

TEST_CASE("sinusoid table: t2t odd channels end with a zero column", "[schemes][sinusoid][standalone]") {
    const std::vector<float> got = run_sinusoid_table(ATTNGEN_SINUSOID_T2T, 7, 0, 10000.0, 20);
    for (int p = 0; p < 20; p++)
        CHECK(got[std::size_t(p) * 7 + 6] == 0.f);
}

TEST_CASE("sinusoid table: short tables (fewer than 16 rows)", "[schemes][sinusoid][standalone]") {
    // The contract's own sample sizes include (max_len, d) = (7, 5); decoding needs single rows.
    struct Shape {
        attngen_sinusoid_convention conv;
        int length, channels;
    };
    for (const Shape &s :
         {Shape{ATTNGEN_SINUSOID_T2T, 7, 5}, Shape{ATTNGEN_SINUSOID_TXL, 7, 5}, Shape{ATTNGEN_SINUSOID_PAPER, 1, 8},
          Shape{ATTNGEN_SINUSOID_PAPER, 15, 64}, Shape{ATTNGEN_SINUSOID_TXL, 3, 1}}) {
        INFO("convention " << int(s.conv) << " length " << s.length << " channels " << s.channels);
        const std::vector<float> got = run_sinusoid_table(s.conv, s.channels, 0, 10000.0, s.length);
        CHECK_CLOSE(got, ref::sinusoid_table(ref_convention(s.conv), s.length, s.channels), 1e-6, 1e-6);
    }
}

TEST_CASE("sinusoid table: position offset and base", "[schemes][sinusoid][standalone]") {
    for (attngen_sinusoid_convention conv : {ATTNGEN_SINUSOID_PAPER, ATTNGEN_SINUSOID_T2T, ATTNGEN_SINUSOID_TXL}) {
        INFO("convention " << int(conv));
        const int offset = 37, length = 20, channels = 16;
        const std::vector<double> full = ref::sinusoid_table(ref_convention(conv), offset + length, channels);
        const std::vector<double> rows(full.begin() + std::ptrdiff_t(offset) * channels, full.end());
        CHECK_CLOSE(run_sinusoid_table(conv, channels, offset, 10000.0, length), rows, 1e-6, 1e-6);
    }
    // Paper convention with base 500: w_i = 500^(-2i/d).
    const int d = 12, length = 30;
    const std::vector<float> got = run_sinusoid_table(ATTNGEN_SINUSOID_PAPER, d, 3, 500.0, length);
    std::vector<double> want;
    for (int p = 0; p < length; p++) {
        for (int c = 0; c < d; c++) {
            const double w = std::pow(500.0, -double(2 * (c / 2)) / d);
            want.push_back(c % 2 == 0 ? std::sin((p + 3) * w) : std::cos((p + 3) * w));
        }
    }
    CHECK_CLOSE(got, want, 1e-6, 1e-6);
}

TEST_CASE("sinusoid table: odd channels in the paper convention are rejected", "[schemes][sinusoid][standalone]") {
    std::vector<float> out(7 * 5, 42.f);
    const Tensor to = tensor(out.data(), {7, 5});
    char error[512];
    CHECK(attngen_sinusoid_table(ATTNGEN_SINUSOID_PAPER, 5, 0, 10000.0, &to, error, sizeof error) ==
          ATTNGEN_ERROR_INVALID_ARGUMENT);
    CHECK_THAT(std::string(error), Catch::Contains("even"));
    CHECK(out == std::vector<float>(7 * 5, 42.f));
    CHECK_THROWS(ref::sinusoid_table(ref::SinusoidConvention::PaperInterleaved, 7, 5));
    // Columns that do not match the convention are rejected too.
    std::vector<float> small(7 * 5);
    const Tensor ts = tensor(small.data(), {7, 5});
    CHECK(attngen_sinusoid_table(ATTNGEN_SINUSOID_TXL, 5, 0, 10000.0, &ts, error, sizeof error) ==
          ATTNGEN_ERROR_INVALID_ARGUMENT);
    CHECK_THAT(std::string(error), Catch::Contains("dimension 1"));
}

TEST_CASE("add_sinusoid: x + table[positions]", "[schemes][sinusoid][standalone]") {
    const int B = 2, L = 9, C = 16;
    const std::vector<float> x = random_floats(std::size_t(B) * L * C, 390);
    for (attngen_sinusoid_convention conv : {ATTNGEN_SINUSOID_PAPER, ATTNGEN_SINUSOID_T2T, ATTNGEN_SINUSOID_TXL}) {
        for (bool explicit_positions : {false, true}) {
            INFO("convention " << int(conv) << " explicit positions " << explicit_positions);
            std::vector<int32_t> positions;
            if (explicit_positions) positions = random_ints(std::size_t(B) * L, 391, 0, 60);
            std::vector<float> out(x.size(), std::numeric_limits<float>::quiet_NaN());
            const Tensor tx = tensor(x.data(), {B, L, C}), to = tensor(out.data(), {B, L, C});
            const Tensor tp = explicit_positions ? tensor(positions.data(), {B, L}) : Tensor{};
            char error[512];
            const attngen_status st =
                attngen_add_sinusoid(&tx, explicit_positions ? &tp : nullptr, conv, 10000.0, &to, error, sizeof error);
            INFO(error);
            REQUIRE(st == ATTNGEN_OK);
            const std::vector<double> table = ref::sinusoid_table(ref_convention(conv), 61, C);
            std::vector<double> want(x.size());
            for (int b = 0; b < B; b++) {
                for (int n = 0; n < L; n++) {
                    const int p = explicit_positions ? positions[std::size_t(b) * L + n] : n;
                    for (int c = 0; c < C; c++) {
                        const std::size_t at = (std::size_t(b) * L + n) * C + c;
                        want[at] = double(x[at]) + table[std::size_t(p) * C + c];
                    }
                }
            }
            CHECK_CLOSE(out, want, 1e-6, 1e-6);
        }
    }
}

TEST_CASE("add_sinusoid: odd channels are rejected where the table has other columns",
          "[schemes][sinusoid][standalone]") {
    std::vector<float> x(2 * 5 * 5, 1.f), out(2 * 5 * 5, 9.f);
    const Tensor tx = tensor(x.data(), {2, 5, 5}), to = tensor(out.data(), {2, 5, 5});
    char error[512];
    CHECK(attngen_add_sinusoid(&tx, nullptr, ATTNGEN_SINUSOID_TXL, 10000.0, &to, error, sizeof error) ==
          ATTNGEN_ERROR_INVALID_ARGUMENT);
    CHECK(attngen_add_sinusoid(&tx, nullptr, ATTNGEN_SINUSOID_PAPER, 10000.0, &to, error, sizeof error) ==
          ATTNGEN_ERROR_INVALID_ARGUMENT);
    CHECK(out == std::vector<float>(2 * 5 * 5, 9.f));
    // tensor2tensor pads odd channel counts with a zero column: accepted.
    CHECK(attngen_add_sinusoid(&tx, nullptr, ATTNGEN_SINUSOID_T2T, 10000.0, &to, error, sizeof error) == ATTNGEN_OK);
    const std::vector<double> table = ref::sinusoid_table(ref::SinusoidConvention::Tensor2TensorConcat, 5, 5);
    std::vector<double> want;
    for (int b = 0; b < 2; b++)
        for (double t : table)
            want.push_back(1.0 + t);
    CHECK_CLOSE(out, want, 1e-6, 1e-6);
}

TEST_CASE("add_learned: x + table[positions + offset], bounds-checked", "[schemes][learned][standalone]") {
    const int B = 2, L = 5, C = 12, rows = 20;
    const std::vector<float> x = random_floats(std::size_t(B) * L * C, 392);
    const std::vector<float> table = random_floats(std::size_t(rows) * C, 393);
    std::vector<int32_t> positions = {0, 4, 9, 2, 2, 15, 1, 0, 3, 12};
    for (int offset : {0, 3}) {
        std::vector<float> out(x.size(), std::numeric_limits<float>::quiet_NaN());
        const Tensor tx = tensor(x.data(), {B, L, C}), to = tensor(out.data(), {B, L, C}),
                     tt = tensor(table.data(), {rows, C});
        const Tensor tp = tensor(positions.data(), {B, L});
        char error[512];
        const attngen_status st = attngen_add_learned(&tx, &tp, offset, &tt, &to, error, sizeof error);
        INFO(error);
        REQUIRE(st == ATTNGEN_OK);
        std::vector<double> want(x.size());
        for (int b = 0; b < B; b++)
            for (int n = 0; n < L; n++)
                for (int c = 0; c < C; c++) {
                    const std::size_t at = (std::size_t(b) * L + n) * C + c;
                    want[at] =
                        double(x[at]) + double(table[std::size_t(positions[std::size_t(b) * L + n] + offset) * C + c]);
                }
        CHECK_CLOSE(out, want, 1e-6, 1e-6);
    }
    // Default positions 0..L-1.
    {
        std::vector<float> out(x.size());
        const Tensor tx = tensor(x.data(), {B, L, C}), to = tensor(out.data(), {B, L, C}),
                     tt = tensor(table.data(), {rows, C});
        char error[512];
        REQUIRE(attngen_add_learned(&tx, nullptr, 0, &tt, &to, error, sizeof error) == ATTNGEN_OK);
        std::vector<double> want(x.size());
        for (int b = 0; b < B; b++)
            for (int n = 0; n < L; n++)
                for (int c = 0; c < C; c++) {
                    const std::size_t at = (std::size_t(b) * L + n) * C + c;
                    want[at] = double(x[at]) + double(table[std::size_t(n) * C + c]);
                }
        CHECK_CLOSE(out, want, 1e-6, 1e-6);
    }
}

TEST_CASE("add_learned: out-of-range positions are rejected", "[schemes][learned][standalone]") {
    const int B = 1, L = 3, C = 4, rows = 8;
    const std::vector<float> x(std::size_t(B) * L * C, 1.f), table(std::size_t(rows) * C, 2.f);
    std::vector<float> out(x.size(), 5.f);
    const Tensor tx = tensor(x.data(), {B, L, C}), to = tensor(out.data(), {B, L, C}),
                 tt = tensor(table.data(), {rows, C});
    char error[512];
    struct Bad {
        std::vector<int32_t> positions;
        int offset;
        const char *position_text;
    };
    for (const Bad &bad : {Bad{{0, 8, 1}, 0, "position 8"}, Bad{{0, 1, -1}, 0, "position -1"},
                           Bad{{0, 1, 5}, 3, "position 8"}, Bad{{0, 1, 2}, -1, "position -1"}}) {
        std::vector<int32_t> positions = bad.positions;
        const Tensor tp = tensor(positions.data(), {B, L});
        CHECK(attngen_add_learned(&tx, &tp, bad.offset, &tt, &to, error, sizeof error) ==
              ATTNGEN_ERROR_INVALID_ARGUMENT);
        INFO(error);
        CHECK_THAT(std::string(error), Catch::Contains(bad.position_text) && Catch::Contains("8 rows"));
        CHECK(out == std::vector<float>(x.size(), 5.f));
    }
    // Default positions past the table.
    const std::vector<float> long_x(std::size_t(1) * 10 * C, 1.f);
    std::vector<float> long_out(long_x.size(), 0.f);
    const Tensor lx = tensor(long_x.data(), {1, 10, C}), lo = tensor(long_out.data(), {1, 10, C});
    CHECK(attngen_add_learned(&lx, nullptr, 0, &tt, &lo, error, sizeof error) == ATTNGEN_ERROR_INVALID_ARGUMENT);
    CHECK_THAT(std::string(error), Catch::Contains("outside"));
}

TEST_CASE("add_sinusoid and add_learned: fewer than 8 rows (B * L < 8)", "[schemes][sinusoid][learned][standalone]") {
    // A single decode token (B = 1, L = 1) is the common case for adding position embeddings.
    const int C = 16, rows = 10;
    const std::vector<float> table = random_floats(std::size_t(rows) * C, 394);
    for (auto [B, L] : {std::pair{1, 1}, std::pair{1, 5}, std::pair{2, 3}}) {
        INFO("B=" << B << " L=" << L);
        const std::vector<float> x = random_floats(std::size_t(B) * L * C, 395);
        const Tensor tx = tensor(x.data(), {B, L, C}), tt = tensor(table.data(), {rows, C});
        std::vector<float> out(x.size(), std::numeric_limits<float>::quiet_NaN());
        const Tensor to = tensor(out.data(), {B, L, C});
        char error[512];
        attngen_status st =
            attngen_add_sinusoid(&tx, nullptr, ATTNGEN_SINUSOID_PAPER, 10000.0, &to, error, sizeof error);
        INFO("add_sinusoid: " << error);
        CHECK(st == ATTNGEN_OK);
        const std::vector<double> sinusoid = ref::sinusoid_table(ref::SinusoidConvention::PaperInterleaved, L, C);
        std::vector<double> want(x.size());
        for (int b = 0; b < B; b++)
            for (int n = 0; n < L; n++)
                for (int c = 0; c < C; c++) {
                    const std::size_t at = (std::size_t(b) * L + n) * C + c;
                    want[at] = double(x[at]) + sinusoid[std::size_t(n) * C + c];
                }
        CHECK_CLOSE(out, want, 1e-6, 1e-6);
        std::fill(out.begin(), out.end(), std::numeric_limits<float>::quiet_NaN());
        st = attngen_add_learned(&tx, nullptr, 2, &tt, &to, error, sizeof error);
        INFO("add_learned: " << error);
        CHECK(st == ATTNGEN_OK);
        for (int b = 0; b < B; b++)
            for (int n = 0; n < L; n++)
                for (int c = 0; c < C; c++) {
                    const std::size_t at = (std::size_t(b) * L + n) * C + c;
                    want[at] = double(x[at]) + double(table[std::size_t(n + 2) * C + c]);
                }
        CHECK_CLOSE(out, want, 1e-6, 1e-6);
    }
}

// =================================================================================================
// Positional functions
// =================================================================================================

TEST_CASE("alibi_slopes: 1..64 heads vs the reference", "[schemes][alibi][functions]") {
    for (int heads = 1; heads <= 64; heads++) {
        Status status;
        const std::vector<double> got = alibi_slopes(heads, &status);
        INFO("heads " << heads << ": " << status.message);
        REQUIRE(status.ok());
        const std::vector<double> want = ref::alibi_slopes(heads);
        REQUIRE(got.size() == want.size());
        for (std::size_t h = 0; h < got.size(); h++)
            CHECK(got[h] == Approx(want[h]).epsilon(1e-12));
    }
    // Known values: 8 heads -> 2^-1 .. 2^-8.
    const std::vector<double> eight = alibi_slopes(8);
    for (int h = 0; h < 8; h++)
        CHECK(eight[std::size_t(h)] == Approx(std::pow(2.0, -(h + 1))).epsilon(1e-14));
    Status status;
    CHECK(alibi_slopes(0, &status).empty());
    CHECK(status.code == ATTNGEN_ERROR_INVALID_ARGUMENT);
}

TEST_CASE("t5_bucket: -1000..1000 vs the reference", "[schemes][t5][functions]") {
    struct Params {
        int buckets, max_distance;
    };
    for (const Params &p : {Params{32, 128}, Params{8, 20}, Params{16, 32}, Params{64, 256}, Params{4, 9}}) {
        for (bool bidirectional : {true, false}) {
            int mismatches = 0, first_bad = 0;
            for (int rel = -1000; rel <= 1000; rel++) {
                Status status;
                const int got = t5_bucket(rel, bidirectional, p.buckets, p.max_distance, &status);
                const int want = ref::t5_bucket(rel, bidirectional, p.buckets, p.max_distance);
                if (!status.ok() || got != want) {
                    if (mismatches++ == 0) first_bad = rel;
                }
            }
            INFO("num_buckets " << p.buckets << " max_distance " << p.max_distance << " bidirectional " << bidirectional
                                << ": first mismatch at " << first_bad);
            CHECK(mismatches == 0);
        }
    }
    // Known values (HF T5, 32 buckets, 128): exact range and saturation.
    CHECK(t5_bucket(0, true, 32, 128) == 0);
    CHECK(t5_bucket(3, true, 32, 128) == 19);
    CHECK(t5_bucket(-3, true, 32, 128) == 3);
    CHECK(t5_bucket(1000, true, 32, 128) == 31);
    CHECK(t5_bucket(-1000, false, 32, 128) == 31);
    CHECK(t5_bucket(5, false, 32, 128) == 0);
}

TEST_CASE("deberta_bucket: -1000..1000 vs the reference", "[schemes][deberta][functions]") {
    struct Params {
        int bucket_size, max_position;
    };
    for (const Params &p : {Params{256, 512}, Params{8, 32}, Params{16, 64}}) {
        int mismatches = 0, first_bad = 0;
        for (int rel = -1000; rel <= 1000; rel++) {
            Status status;
            const int got = deberta_bucket(rel, p.bucket_size, p.max_position, &status);
            const int want = ref::deberta_log_bucket(rel, p.bucket_size, p.max_position);
            if (!status.ok() || got != want) {
                if (mismatches++ == 0) first_bad = rel;
            }
        }
        INFO("bucket_size " << p.bucket_size << " max_position " << p.max_position << ": first mismatch at "
                            << first_bad);
        CHECK(mismatches == 0);
    }
    CHECK(deberta_bucket(3, 8, 32) == 3);
    CHECK(deberta_bucket(-4, 8, 32) == -4);
    CHECK(deberta_bucket(0, 256, 512) == 0);
}

TEST_CASE("rope_inv_freq: every scaling vs the reference (rtol 1e-6)", "[schemes][rope][functions]") {
    auto check = [](const attngen_rope_params &params, int head_dim, int seq_len) {
        double factor_got = 0, factor_want = 0;
        Status status;
        const std::vector<float> got = rope_inv_freq(params, head_dim, seq_len, &factor_got, &status);
        INFO("scaling " << int(params.scaling) << " head_dim " << head_dim << " rot_dim " << params.rot_dim
                        << " seq_len " << seq_len << ": " << status.message);
        REQUIRE(status.ok());
        const std::vector<double> want = reference_inv_freq(params, head_dim, seq_len, &factor_want);
        CHECK_CLOSE(got, want, 0, 1e-6);
        CHECK(factor_got == Approx(factor_want).epsilon(1e-6));
    };
    attngen_rope_params p = rope_params(ATTNGEN_ROPE_HALF);
    check(p, 64, 1);
    check(p, 128, 1);
    p.rot_dim = 24;
    check(p, 64, 1);
    p = rope_params(ATTNGEN_ROPE_HALF, 500000.0);
    check(p, 128, 1);
    p.scaling = ATTNGEN_ROPE_SCALING_LINEAR;
    p.factor = 4;
    check(p, 64, 1);
    p.scaling = ATTNGEN_ROPE_SCALING_DYNAMIC_NTK;
    p.factor = 2;
    p.max_position_embeddings = 16;
    check(p, 16, 33);  // scaled
    check(p, 16, 16);  // not scaled (seq_len <= max_position_embeddings)
    check(p, 64, 1000);
    p = rope_params(ATTNGEN_ROPE_HALF, 500000.0);
    p.scaling = ATTNGEN_ROPE_SCALING_LLAMA3;
    p.factor = 8;
    p.low_freq_factor = 1;
    p.high_freq_factor = 4;
    p.original_max_position_embeddings = 8192;
    check(p, 128, 1);
    check(p, 64, 1);
    p.original_max_position_embeddings = 64;
    p.base = 10000;
    check(p, 16, 1);
    p = rope_params(ATTNGEN_ROPE_HALF);
    p.scaling = ATTNGEN_ROPE_SCALING_YARN;
    p.factor = 4;
    p.original_max_position_embeddings = 64;
    check(p, 32, 1);
    p.original_max_position_embeddings = 4096;
    p.factor = 16;
    check(p, 128, 1);
    p.beta_fast = 16;
    p.beta_slow = 2;
    p.attention_factor = 1.25;
    check(p, 64, 1);
}

// =================================================================================================
// Every scheme
// =================================================================================================
TEST_CASE("every scheme: decode at lengths around key blocks and chunk ends", "[schemes][decode][padding]") {
    // Decode computes a partial key chunk only up to the 128-key block holding its last visible key (and
    // one masked block past it): lengths just below, at and past block and chunk ends (chunks of 256 to
    // 2048 keys; 4096 in multi-head copies), padding that ends inside a chunk, multi-head and grouped-query
    // layouts, both fast-path head dims.
    struct Shape {
        int H, Hkv, Lk, D;
        std::vector<int32_t> kv_lengths;
    };
    const Shape shapes[] = {
        {4, 4, 1, 128, {}},        {4, 4, 129, 128, {}},
        {4, 4, 1025, 128, {}},     {8, 2, 127, 64, {}},
        {8, 2, 513, 64, {}},       {4, 4, 2049, 64, {}},
        {8, 2, 1100, 128, {}},     {4, 4, 1024, 128, {129, 1000}},
        {8, 2, 700, 64, {300, 1}}, {2, 2, 4097, 128, {4097, 4000}},
        {2, 2, 4500, 64, {}},
    };
    uint64_t seed = 9100;
    for (const attngen_scheme scheme : kBuiltInSchemes) {
        for (const Shape &shape : shapes) {
            const int batch = shape.kv_lengths.empty() ? 1 : int(shape.kv_lengths.size());
            AttnCase c = base_case(batch, shape.H, shape.Hkv, 1, shape.Lk, shape.D, seed,
                                   seed % 2 ? ATTNGEN_MASK_CAUSAL : ATTNGEN_MASK_NONE);
            c.kv_lengths = shape.kv_lengths;
            set_random_scheme(c, scheme, seed++);
            CHECK_MATCHES_REFERENCE(c);
        }
    }
}

TEST_CASE("every scheme: padding rows holding NaN and infinities never reach the output", "[schemes][padding]") {
    // kv_lengths masks a batch's keys past its length, where a cache's rows may be uninitialized (NaN, inf,
    // huge values): the outputs equal those of finite padding. Prefill and decode, multi-head and grouped-query
    // layouts, both fast-path head dims and a generic one, a fully padded batch.
    struct Shape {
        int H, Hkv, Lq, Lk, D;
    };
    const Shape shapes[] = {
        {4, 4, 1, 300, 128}, {8, 2, 1, 1100, 64}, {4, 2, 37, 300, 64}, {2, 2, 1, 70, 40}, {2, 2, 20, 70, 40}};
    uint64_t seed = 9300;
    for (const attngen_scheme scheme : kBuiltInSchemes) {
        for (const Shape &shape : shapes) {
            AttnCase c = base_case(3, shape.H, shape.Hkv, shape.Lq, shape.Lk, shape.D, seed,
                                   seed % 2 ? ATTNGEN_MASK_CAUSAL : ATTNGEN_MASK_NONE);
            c.kv_lengths = {shape.Lk, shape.Lk / 2 + 1, 0};
            set_random_scheme(c, scheme, seed++);
            CHECK_PADDING_IS_NEVER_USED(c, run_attngen, kAtol, kRtol);
        }
    }
}
