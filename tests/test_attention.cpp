// Plain scaled dot-product attention (SDPA) against the double-precision reference: shapes, masks,
// padding, head dims, strided views, numerics, empty extents and the run info.
#include "test_support.h"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <limits>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

using namespace attngen;
using namespace attngen::test;

namespace {

AttnCase sdpa(int B, int H, int Hkv, int Lq, int Lk, int D, uint64_t seed, attngen_mask mask = ATTNGEN_MASK_NONE) {
    AttnCase c = make_case(B, H, Hkv, Lq, Lk, D, seed);
    c.mask = mask;
    return c;
}

// Row (b, h, i) of a [B,H,Lq,D] output.
std::vector<float> row_of(const AttnCase &c, const std::vector<float> &out, int b, int h, int i) {
    const std::size_t off = ((std::size_t(b) * c.heads + h) * c.q_len + i) * c.head_dim;
    return {out.begin() + std::ptrdiff_t(off), out.begin() + std::ptrdiff_t(off + c.head_dim)};
}

bool all_exactly_zero(const std::vector<float> &values) {
    for (float x : values) {
        if (!(x == 0.f)) return false;
    }
    return true;
}

}  // namespace

// ---- shapes ------------------------------------------------------------------------------------

TEST_CASE("sdpa: square non-causal prefill matches the reference", "[attention][sdpa]") {
    CHECK_MATCHES_REFERENCE(sdpa(2, 4, 4, 7, 7, 16, 1));
    CHECK_MATCHES_REFERENCE(sdpa(1, 2, 2, 20, 20, 32, 2));
}

TEST_CASE("sdpa: causal prefill with odd lengths", "[attention][sdpa][causal]") {
    CHECK_MATCHES_REFERENCE(sdpa(1, 3, 3, 33, 33, 32, 3, ATTNGEN_MASK_CAUSAL));
    CHECK_MATCHES_REFERENCE(sdpa(2, 1, 1, 5, 5, 8, 4, ATTNGEN_MASK_CAUSAL));
    CHECK_MATCHES_REFERENCE(sdpa(1, 2, 2, 97, 97, 24, 5, ATTNGEN_MASK_CAUSAL));
    CHECK_MATCHES_REFERENCE(sdpa(1, 1, 1, 2, 2, 16, 6, ATTNGEN_MASK_CAUSAL));
}

TEST_CASE("sdpa: decode (Lq = 1) runs the decode kernel and matches the reference", "[attention][sdpa][decode]") {
    for (int Lk : {1, 2, 17, 33, 300}) {
        for (attngen_mask mask : {ATTNGEN_MASK_NONE, ATTNGEN_MASK_CAUSAL}) {
            AttnCase c = sdpa(2, 4, 4, 1, Lk, 32, 10 + Lk, mask);
            CHECK_MATCHES_REFERENCE(c);
            std::vector<float> out;
            RunInfo info{};
            REQUIRE(run_attngen(c, out, &info).ok());
            INFO("kernel " << info.kernel);
            CHECK(std::string(info.kernel) == "attngen_sdpa_decode_cpu");
        }
    }
}

TEST_CASE("sdpa: chunked prefill (Lq < Lk) is bottom-right aligned", "[attention][sdpa][causal]") {
    CHECK_MATCHES_REFERENCE(sdpa(1, 4, 2, 5, 12, 8, 20, ATTNGEN_MASK_CAUSAL));
    CHECK_MATCHES_REFERENCE(sdpa(2, 2, 2, 9, 37, 16, 21, ATTNGEN_MASK_CAUSAL));
    CHECK_MATCHES_REFERENCE(sdpa(1, 2, 2, 3, 20, 16, 22, ATTNGEN_MASK_NONE));  // cross attention
    CHECK_MATCHES_REFERENCE(sdpa(1, 1, 1, 31, 64, 64, 23, ATTNGEN_MASK_CAUSAL));
}

TEST_CASE("sdpa: chunk rows equal the corresponding rows of the full causal run", "[attention][sdpa][causal]") {
    AttnCase full = sdpa(1, 2, 2, 40, 40, 16, 24, ATTNGEN_MASK_CAUSAL);
    AttnCase chunk = full;
    chunk.q_len = 7;
    chunk.q.clear();
    for (int h = 0; h < 2; h++) {
        for (int i = 40 - 7; i < 40; i++) {
            for (int d = 0; d < 16; d++)
                chunk.q.push_back(full.q[(std::size_t(h) * 40 + i) * 16 + d]);
        }
    }
    std::vector<float> out_full, out_chunk;
    REQUIRE(run_attngen(full, out_full).ok());
    REQUIRE(run_attngen(chunk, out_chunk).ok());
    for (int h = 0; h < 2; h++) {
        for (int i = 0; i < 7; i++)
            CHECK_CLOSE(row_of(chunk, out_chunk, 0, h, i), row_of(full, out_full, 0, h, 33 + i), 1e-5, 1e-5);
    }
}

TEST_CASE("sdpa: Lq > Lk without a mask", "[attention][sdpa]") {
    CHECK_MATCHES_REFERENCE(sdpa(1, 2, 2, 13, 5, 16, 30));
    CHECK_MATCHES_REFERENCE(sdpa(2, 1, 1, 9, 1, 8, 31));
}

TEST_CASE("sdpa: Lq > Lk causal: rows before position 0 are exactly zero", "[attention][sdpa][causal]") {
    AttnCase c = sdpa(2, 2, 1, 11, 4, 16, 32, ATTNGEN_MASK_CAUSAL);
    CHECK_MATCHES_REFERENCE(c);
    std::vector<float> out;
    REQUIRE(run_attngen(c, out).ok());
    for (int b = 0; b < c.batch; b++) {
        for (int h = 0; h < c.heads; h++) {
            for (int i = 0; i < c.q_len; i++) {
                const int p = c.k_len - c.q_len + i;
                INFO("b=" << b << " h=" << h << " i=" << i << " p_i=" << p);
                if (p < 0) {
                    CHECK(all_exactly_zero(row_of(c, out, b, h, i)));
                } else {
                    CHECK_FALSE(all_exactly_zero(row_of(c, out, b, h, i)));
                }
            }
        }
    }
}

TEST_CASE("sdpa: grouped-query attention (GQA)", "[attention][sdpa][gqa]") {
    CHECK_MATCHES_REFERENCE(sdpa(2, 8, 2, 9, 9, 32, 40, ATTNGEN_MASK_CAUSAL));
    CHECK_MATCHES_REFERENCE(sdpa(1, 6, 3, 17, 17, 16, 41));
    CHECK_MATCHES_REFERENCE(sdpa(2, 8, 4, 1, 23, 64, 42, ATTNGEN_MASK_CAUSAL));
}

TEST_CASE("sdpa: GQA shares a kv head between consecutive query heads", "[attention][sdpa][gqa]") {
    // Query heads 0,1 read kv head 0 and heads 2,3 kv head 1: identical query rows give identical outputs
    // within a group and different outputs across groups.
    AttnCase c = sdpa(1, 4, 2, 3, 10, 16, 43);
    for (int h = 1; h < 4; h++)
        std::copy(c.q.begin(), c.q.begin() + 3 * 16, c.q.begin() + h * 3 * 16);
    std::vector<float> out;
    REQUIRE(run_attngen(c, out).ok());
    CHECK_MATCHES_REFERENCE(c);
    CHECK_CLOSE(row_of(c, out, 0, 1, 2), row_of(c, out, 0, 0, 2), 0, 0);
    CHECK_CLOSE(row_of(c, out, 0, 3, 2), row_of(c, out, 0, 2, 2), 0, 0);
    CHECK_FALSE(compare(row_of(c, out, 0, 2, 2), row_of(c, out, 0, 0, 2), 1e-3, 0).ok);
}

TEST_CASE("sdpa: multi-query attention (MQA)", "[attention][sdpa][gqa]") {
    CHECK_MATCHES_REFERENCE(sdpa(2, 4, 1, 1, 33, 64, 44, ATTNGEN_MASK_CAUSAL));
    CHECK_MATCHES_REFERENCE(sdpa(1, 6, 1, 12, 12, 16, 45, ATTNGEN_MASK_CAUSAL));
    CHECK_MATCHES_REFERENCE(sdpa(1, 5, 1, 7, 19, 8, 46));
}

// ---- masks and padding --------------------------------------------------------------------------

TEST_CASE("sdpa: sliding-window mask", "[attention][sdpa][mask]") {
    for (int window : {1, 3, 8}) {
        AttnCase c = sdpa(1, 2, 2, 21, 21, 16, 50 + window, ATTNGEN_MASK_SLIDING_WINDOW);
        c.window = window;
        CHECK_MATCHES_REFERENCE(c);
    }
    AttnCase chunk = sdpa(2, 4, 2, 6, 30, 32, 55, ATTNGEN_MASK_SLIDING_WINDOW);
    chunk.window = 5;
    CHECK_MATCHES_REFERENCE(chunk);
    AttnCase decode = sdpa(1, 2, 1, 1, 40, 16, 56, ATTNGEN_MASK_SLIDING_WINDOW);
    decode.window = 7;
    CHECK_MATCHES_REFERENCE(decode);
}

TEST_CASE("sdpa: window 1 attends only to the own position", "[attention][sdpa][mask]") {
    // With Lq == Lk each row sees exactly key i: out row i equals v row i.
    AttnCase c = sdpa(1, 1, 1, 9, 9, 8, 57, ATTNGEN_MASK_SLIDING_WINDOW);
    c.window = 1;
    std::vector<float> out;
    REQUIRE(run_attngen(c, out).ok());
    CHECK_CLOSE(out, c.v, 1e-6, 1e-6);
}

TEST_CASE("sdpa: a window covering every key equals the causal mask", "[attention][sdpa][mask]") {
    AttnCase window = sdpa(1, 2, 2, 15, 15, 16, 58, ATTNGEN_MASK_SLIDING_WINDOW);
    window.window = 15;
    AttnCase causal = window;
    causal.mask = ATTNGEN_MASK_CAUSAL;
    std::vector<float> a, b;
    REQUIRE(run_attngen(window, a).ok());
    REQUIRE(run_attngen(causal, b).ok());
    CHECK_CLOSE(a, b, 1e-6, 1e-6);
}

TEST_CASE("sdpa: windows, padding and causal masks across many key chunks and query tiles",
          "[attention][sdpa][mask][padding]") {
    // Kernels visit only the key chunks (and 16-key groups of a chunk) a query tile can see: these
    // shapes span several chunks and tiles, so ranges begin and end inside and between chunks.
    struct Shape {
        int B, H, Hkv, Lq, Lk, D;
        attngen_mask mask;
        int window;
        std::vector<int32_t> kv_lengths;
    };
    const Shape shapes[] = {
        {1, 2, 2, 300, 700, 64, ATTNGEN_MASK_SLIDING_WINDOW, 100, {}},  // chunked prefill
        {2, 2, 1, 200, 520, 128, ATTNGEN_MASK_SLIDING_WINDOW, 150, {520, 333}},
        {3, 2, 2, 130, 600, 64, ATTNGEN_MASK_NONE, 0, {600, 140, 17}},
        {3, 2, 2, 130, 600, 64, ATTNGEN_MASK_CAUSAL, 0, {600, 140, 17}},
        {1, 2, 2, 97, 389, 40, ATTNGEN_MASK_SLIDING_WINDOW, 64, {}},            // generic head dim
        {2, 2, 2, 1, 1000, 64, ATTNGEN_MASK_SLIDING_WINDOW, 200, {1000, 150}},  // decode
        {1, 2, 2, 400, 260, 64, ATTNGEN_MASK_CAUSAL, 0, {}},                    // Lq > Lk: early rows see no key
    };
    uint64_t seed = 70;
    for (const Shape &shape : shapes) {
        AttnCase c = sdpa(shape.B, shape.H, shape.Hkv, shape.Lq, shape.Lk, shape.D, seed++, shape.mask);
        c.window = shape.window;
        c.kv_lengths = shape.kv_lengths;
        CHECK_MATCHES_REFERENCE(c);
    }
}

TEST_CASE("sdpa: decode with grouped query heads over several key chunks", "[attention][sdpa][decode][gqa]") {
    // Groups of 1 (MHA), 3, 4 and 8 (MQA) query heads per KV head; several key chunks, padded
    // batches. A decode task runs a group's heads, or part of a group where the groups are too few
    // to share out over the threads (MQA on one sequence), or one head (3 heads, one KV head).
    struct Shape {
        int B, H, Hkv, Lk, D;
        attngen_mask mask;
        std::vector<int32_t> kv_lengths;
    };
    const Shape shapes[] = {
        {2, 3, 3, 1300, 128, ATTNGEN_MASK_CAUSAL, {1300, 513}},
        {2, 6, 2, 1300, 64, ATTNGEN_MASK_CAUSAL, {1300, 513}},
        {1, 8, 1, 1500, 128, ATTNGEN_MASK_NONE, {}},
        {1, 6, 2, 700, 40, ATTNGEN_MASK_CAUSAL, {}},  // generic head dim
        {3, 8, 2, 1100, 64, ATTNGEN_MASK_CAUSAL, {1100, 600, 1}},
        {1, 3, 1, 900, 128, ATTNGEN_MASK_NONE, {}},
    };
    uint64_t seed = 140;
    for (const Shape &shape : shapes) {
        AttnCase c = sdpa(shape.B, shape.H, shape.Hkv, 1, shape.Lk, shape.D, seed++, shape.mask);
        c.kv_lengths = shape.kv_lengths;
        CHECK_MATCHES_REFERENCE(c);
    }
}

TEST_CASE("sdpa: kv_lengths padding, including an empty batch", "[attention][sdpa][padding]") {
    for (attngen_mask mask : {ATTNGEN_MASK_NONE, ATTNGEN_MASK_CAUSAL}) {
        AttnCase c = sdpa(3, 2, 2, 9, 9, 16, 60, mask);
        c.kv_lengths = {9, 5, 0};
        CHECK_MATCHES_REFERENCE(c);
        std::vector<float> out;
        REQUIRE(run_attngen(c, out).ok());
        // Batch 2 has no valid key: all zeros.
        const std::size_t per_batch = std::size_t(c.heads) * c.q_len * c.head_dim;
        CHECK(all_exactly_zero({out.begin() + std::ptrdiff_t(2 * per_batch), out.end()}));
    }
}

TEST_CASE("sdpa: kv_lengths do not shift positions", "[attention][sdpa][padding]") {
    // Padding masks keys j >= kv_len only: with causal and Lq == Lk, rows i >= kv_len still sit at
    // position i and see keys 0..kv_len-1.
    AttnCase c = sdpa(2, 2, 2, 12, 12, 8, 61, ATTNGEN_MASK_CAUSAL);
    c.kv_lengths = {7, 12};
    CHECK_MATCHES_REFERENCE(c);
    AttnCase chunk = sdpa(2, 4, 2, 4, 25, 16, 62, ATTNGEN_MASK_CAUSAL);
    chunk.kv_lengths = {3, 20};
    CHECK_MATCHES_REFERENCE(chunk);  // batch 0: kv_len below every query position
}

TEST_CASE("sdpa: kv_lengths in decode, GQA and sliding window", "[attention][sdpa][padding]") {
    AttnCase decode = sdpa(4, 4, 2, 1, 30, 64, 63, ATTNGEN_MASK_CAUSAL);
    decode.kv_lengths = {30, 1, 0, 17};
    CHECK_MATCHES_REFERENCE(decode);
    AttnCase window = sdpa(2, 2, 1, 10, 16, 16, 64, ATTNGEN_MASK_SLIDING_WINDOW);
    window.window = 4;
    window.kv_lengths = {13, 8};
    CHECK_MATCHES_REFERENCE(window);
}

TEST_CASE("sdpa: strided kv_lengths tensor", "[attention][sdpa][padding]") {
    AttnCase c = sdpa(3, 1, 1, 5, 8, 8, 65);
    c.kv_lengths = {8, 3, 6};
    std::vector<int32_t> spaced = {8, -1, 3, -1, 6};  // every other element
    attngen_attention_desc desc = make_desc(c);
    desc.kv_lengths = attngen::tensor(spaced.data(), {3});
    desc.kv_lengths.strides[0] = 2;
    std::vector<float> out(c.q_size(), std::numeric_limits<float>::quiet_NaN());
    const Status status = attngen::attention(q_tensor(c), k_tensor(c), v_tensor(c), out_tensor(c, out), desc);
    INFO(status.message);
    REQUIRE(status.ok());
    CHECK_CLOSE(out, reference_output(c), kAtol, kRtol);
}

TEST_CASE("sdpa: random shapes, masks and padding (seeded sweep)", "[attention][sdpa][sweep]") {
    for (uint64_t seed = 1; seed <= 100; seed++) {
        const AttnCase c = random_case(1000 + seed, {1, 3, 7, 16, 48, 64, 65, 100, 128});
        CHECK_MATCHES_REFERENCE(c);
    }
}

// ---- head dims and scale -----------------------------------------------------------------------

TEST_CASE("sdpa: generic head dims, prefill", "[attention][sdpa][head_dim]") {
    const int D = GENERATE(1, 3, 7, 16, 48, 65, 100, 200, 256);
    CHECK_MATCHES_REFERENCE(sdpa(1, 2, 1, 11, 13, D, 70 + D, ATTNGEN_MASK_CAUSAL));
    CHECK_MATCHES_REFERENCE(sdpa(1, 1, 1, 6, 6, D, 71 + D, ATTNGEN_MASK_NONE));
}

TEST_CASE("sdpa: generic head dims, decode", "[attention][sdpa][head_dim][decode]") {
    const int D = GENERATE(1, 3, 7, 16, 48, 65, 100, 200, 256);
    CHECK_MATCHES_REFERENCE(sdpa(2, 2, 2, 1, 19, D, 72 + D, ATTNGEN_MASK_CAUSAL));
}

TEST_CASE("sdpa: fast-path head dims 64 and 128", "[attention][sdpa][head_dim]") {
    const int D = GENERATE(64, 128);
    CHECK_MATCHES_REFERENCE(sdpa(2, 4, 2, 37, 37, D, 73 + D, ATTNGEN_MASK_CAUSAL));
    CHECK_MATCHES_REFERENCE(sdpa(1, 2, 2, 9, 70, D, 74 + D, ATTNGEN_MASK_NONE));
    CHECK_MATCHES_REFERENCE(sdpa(2, 2, 1, 1, 130, D, 75 + D, ATTNGEN_MASK_CAUSAL));
}

TEST_CASE("sdpa: explicit scale", "[attention][sdpa][scale]") {
    for (float scale : {0.37f, 2.0f, 1e-3f}) {
        AttnCase c = sdpa(1, 2, 2, 8, 8, 16, 80, ATTNGEN_MASK_CAUSAL);
        c.scale = scale;
        CHECK_MATCHES_REFERENCE(c);
        AttnCase d = sdpa(1, 2, 2, 1, 8, 16, 81);
        d.scale = scale;
        CHECK_MATCHES_REFERENCE(d);
    }
}

TEST_CASE("sdpa: scale 0 is 1/sqrt(head_dim)", "[attention][sdpa][scale]") {
    AttnCase by_default = sdpa(1, 2, 2, 6, 9, 25, 82);
    AttnCase explicit_scale = by_default;
    explicit_scale.scale = 1.f / 5.f;
    std::vector<float> a, b;
    REQUIRE(run_attngen(by_default, a).ok());
    REQUIRE(run_attngen(explicit_scale, b).ok());
    CHECK_CLOSE(a, b, 1e-6, 1e-6);
}

// ---- strided views ------------------------------------------------------------------------------

TEST_CASE("sdpa: non-contiguous q, k, v and out with padded rows", "[attention][sdpa][strided]") {
    AttnCase c = sdpa(2, 4, 2, 7, 11, 16, 90, ATTNGEN_MASK_CAUSAL);
    const int64_t qs[4] = {2, 4, 7, 16}, ks[4] = {2, 2, 11, 16};
    // Every dimension padded: rows of 16 + 5, extra gaps between heads and batches.
    const int64_t q_str[4] = {4 * 7 * 21 + 13, 7 * 21 + 3, 21, 1};
    const int64_t k_str[4] = {2 * (11 * 19 + 2) + 1, 11 * 19 + 2, 19, 1};
    const int64_t v_str[4] = {2 * 11 * 24, 11 * 24, 24, 1};
    const int64_t o_str[4] = {4 * 7 * 20 + 9, 7 * 20, 20, 1};
    const float sentinel = 777.f;
    std::vector<float> qbuf(std::size_t(2 * q_str[0]), sentinel), kbuf(std::size_t(2 * k_str[0]), sentinel),
        vbuf(std::size_t(2 * v_str[0]), sentinel), obuf(std::size_t(2 * o_str[0]), sentinel);
    scatter4(c.q, qs, q_str, qbuf);
    scatter4(c.k, ks, k_str, kbuf);
    scatter4(c.v, ks, v_str, vbuf);
    const Tensor q = strided(qbuf.data(), {2, 4, 7, 16}, {q_str[0], q_str[1], q_str[2], q_str[3]});
    const Tensor k = strided(kbuf.data(), {2, 2, 11, 16}, {k_str[0], k_str[1], k_str[2], k_str[3]});
    const Tensor v = strided(vbuf.data(), {2, 2, 11, 16}, {v_str[0], v_str[1], v_str[2], v_str[3]});
    const Tensor out = strided(obuf.data(), {2, 4, 7, 16}, {o_str[0], o_str[1], o_str[2], o_str[3]});
    const Status status = run_views(c, q, k, v, out);
    INFO(status.message);
    REQUIRE(status.ok());
    CHECK_CLOSE(gather4(obuf, qs, o_str), reference_output(c), kAtol, kRtol);
    // The padding between rows is not written.
    std::vector<float> marker(obuf.size(), 0.f);
    scatter4(std::vector<float>(c.q_size(), 1.f), qs, o_str, marker);
    std::size_t touched_padding = 0;
    for (std::size_t n = 0; n < obuf.size(); n++)
        touched_padding += (marker[n] == 0.f && obuf[n] != sentinel);
    CHECK(touched_padding == 0);
}

TEST_CASE("sdpa: non-unit innermost stride", "[attention][sdpa][strided]") {
    AttnCase c = sdpa(1, 2, 2, 5, 9, 16, 91);
    const int64_t qs[4] = {1, 2, 5, 16}, ks[4] = {1, 2, 9, 16};
    const int64_t q_str[4] = {2 * 5 * 16 * 2, 5 * 16 * 2, 16 * 2, 2};  // every other float
    const int64_t k_str[4] = {2 * 9 * 16 * 3, 9 * 16 * 3, 16 * 3, 3};  // every third float
    const int64_t v_str[4] = {2 * 9 * 16, 9 * 16, 16, 1};
    const int64_t o_str[4] = {2 * 5 * 16 * 3, 5 * 16 * 3, 16 * 3, 3};
    const float sentinel = -555.f;
    std::vector<float> qbuf(std::size_t(q_str[0]), sentinel), kbuf(std::size_t(k_str[0]), sentinel),
        vbuf(std::size_t(v_str[0]), sentinel), obuf(std::size_t(o_str[0]), sentinel);
    scatter4(c.q, qs, q_str, qbuf);
    scatter4(c.k, ks, k_str, kbuf);
    scatter4(c.v, ks, v_str, vbuf);
    const Tensor q = strided(qbuf.data(), {1, 2, 5, 16}, {q_str[0], q_str[1], q_str[2], q_str[3]});
    const Tensor k = strided(kbuf.data(), {1, 2, 9, 16}, {k_str[0], k_str[1], k_str[2], k_str[3]});
    const Tensor v = strided(vbuf.data(), {1, 2, 9, 16}, {v_str[0], v_str[1], v_str[2], v_str[3]});
    const Tensor out = strided(obuf.data(), {1, 2, 5, 16}, {o_str[0], o_str[1], o_str[2], o_str[3]});
    const Status status = run_views(c, q, k, v, out);
    INFO(status.message);
    REQUIRE(status.ok());
    CHECK_CLOSE(gather4(obuf, qs, o_str), reference_output(c), kAtol, kRtol);
    std::size_t gaps_written = 0;
    for (std::size_t n = 0; n < obuf.size(); n++)
        gaps_written += (n % 3 != 0 && obuf[n] != sentinel);
    CHECK(gaps_written == 0);
    // Inputs are read, never written (packed copies are private).
    CHECK(gather4(qbuf, qs, q_str) == c.q);
    CHECK(gather4(kbuf, ks, k_str) == c.k);
}

TEST_CASE("sdpa: transposed-heads views ([B, L, H, D] storage)", "[attention][sdpa][strided]") {
    // A projection's natural layout is [B, L, H, D]: view it as [B, H, L, D] with strides.
    const int B = 2, H = 4, Hkv = 2, Lq = 6, Lk = 10, D = 32;
    AttnCase c = sdpa(B, H, Hkv, Lq, Lk, D, 92, ATTNGEN_MASK_CAUSAL);
    const int64_t qs[4] = {B, H, Lq, D}, ks[4] = {B, Hkv, Lk, D};
    const int64_t q_str[4] = {int64_t(Lq) * H * D, D, int64_t(H) * D, 1};
    const int64_t k_str[4] = {int64_t(Lk) * Hkv * D, D, int64_t(Hkv) * D, 1};
    std::vector<float> qbuf(c.q_size()), kbuf(c.kv_size()), vbuf(c.kv_size()), obuf(c.q_size(), 0.f);
    scatter4(c.q, qs, q_str, qbuf);
    scatter4(c.k, ks, k_str, kbuf);
    scatter4(c.v, ks, k_str, vbuf);
    const Tensor q = strided(qbuf.data(), {B, H, Lq, D}, {q_str[0], q_str[1], q_str[2], q_str[3]});
    const Tensor k = strided(kbuf.data(), {B, Hkv, Lk, D}, {k_str[0], k_str[1], k_str[2], k_str[3]});
    const Tensor v = strided(vbuf.data(), {B, Hkv, Lk, D}, {k_str[0], k_str[1], k_str[2], k_str[3]});
    const Tensor out = strided(obuf.data(), {B, H, Lq, D}, {q_str[0], q_str[1], q_str[2], q_str[3]});
    const Status status = run_views(c, q, k, v, out);
    INFO(status.message);
    REQUIRE(status.ok());
    CHECK_CLOSE(gather4(obuf, qs, q_str), reference_output(c), kAtol, kRtol);
}

TEST_CASE("sdpa: size-1 dimensions accept any stride", "[attention][sdpa][strided]") {
    // B = 1 and H = 1: the strides of those dimensions are never used, even 0.
    AttnCase c = sdpa(1, 1, 1, 4, 6, 8, 93);
    std::vector<float> out(c.q_size(), std::numeric_limits<float>::quiet_NaN());
    std::vector<float> q = c.q, k = c.k, v = c.v;
    const Tensor tq = strided(q.data(), {1, 1, 4, 8}, {0, 0, 8, 1});
    const Tensor tk = strided(k.data(), {1, 1, 6, 8}, {0, 12345, 8, 1});
    const Tensor tv = strided(v.data(), {1, 1, 6, 8}, {1, 1, 8, 1});
    const Tensor to = strided(out.data(), {1, 1, 4, 8}, {0, 0, 8, 1});
    const Status status = run_views(c, tq, tk, tv, to);
    INFO(status.message);
    REQUIRE(status.ok());
    CHECK_CLOSE(out, reference_output(c), kAtol, kRtol);
}

// ---- numerics -----------------------------------------------------------------------------------

TEST_CASE("sdpa: logits of magnitude 1e4 give finite, correct outputs", "[attention][sdpa][numerics]") {
    for (int Lq : {1, 9}) {
        AttnCase c = sdpa(1, 2, 2, Lq, 33, 16, 100 + Lq, Lq == 1 ? ATTNGEN_MASK_NONE : ATTNGEN_MASK_CAUSAL);
        for (float &x : c.q)
            x *= 1e4f;  // scaled logits up to ~ +-1e4
        double max_logit = 0;
        const ref::Problem p = ref_problem(c);
        for (int i = 0; i < Lq; i++) {
            for (int j = 0; j < 33; j++) {
                double s = 0;
                for (int d = 0; d < 16; d++)
                    s += p.q[std::size_t(i) * 16 + d] * p.k[std::size_t(j) * 16 + d];
                max_logit = std::max(max_logit, std::fabs(s) / 4);
            }
        }
        INFO("max |logit| " << max_logit);
        CHECK(max_logit > 5e3);
        CHECK_MATCHES_REFERENCE(c);
    }
}

TEST_CASE("sdpa: negative large logits (all scores around -1e4) do not underflow to NaN",
          "[attention][sdpa][numerics]") {
    AttnCase c = sdpa(1, 1, 1, 4, 8, 4, 102);
    // q . k = -1e4 * 4 + small: every score is hugely negative; softmax must still normalise.
    for (float &x : c.q)
        x = 1e4f;
    for (std::size_t n = 0; n < c.k.size(); n++)
        c.k[n] = -2.f + 0.01f * float(n % 7);
    CHECK_MATCHES_REFERENCE(c);
}

TEST_CASE("sdpa: scores spread 200 below the row max (weights flushed to 0 below e^-40)",
          "[attention][sdpa][numerics]") {
    // Key j scores -0.2 |j - peak| relative to the row max: the weights cross e^-40 (flushed) and e^-87
    // (fp32's smallest normal number) within a chunk, and whole chunks lie more than 40 below the max.
    const int Lk = 1100, D = 16, peak = 500;
    for (int Lq : {1, 7}) {
        AttnCase c = sdpa(1, 2, 2, Lq, Lk, D, 106 + Lq);
        for (std::size_t n = 0; n < c.q.size(); n++)
            c.q[n] = n % D == 0 ? 4.0f : 0.01f * c.q[n];  // scale 1/4: score = k[0] + small
        for (int h = 0; h < 2; h++) {
            for (int j = 0; j < Lk; j++) {
                float &k0 = c.k[(std::size_t(h) * Lk + j) * D];
                k0 = -0.2f * float(std::abs(j - peak - h)) + 0.01f * k0;
            }
        }
        INFO("Lq " << Lq);
        CHECK_MATCHES_REFERENCE(c);
    }
}

TEST_CASE("sdpa: every row fully masked gives zeros, not NaN", "[attention][sdpa][numerics]") {
    for (int Lq : {1, 6}) {
        AttnCase c = sdpa(2, 2, 2, Lq, 6, 16, 103, ATTNGEN_MASK_CAUSAL);
        c.kv_lengths = {0, 0};
        std::vector<float> out;
        const Status status = run_attngen(c, out);
        INFO(status.message);
        REQUIRE(status.ok());
        CHECK(all_exactly_zero(out));
        CHECK_CLOSE(out, reference_output(c), 0, 0);
    }
    // Causal with Lq > Lk and padding below every position: no row has an allowed key.
    AttnCase c = sdpa(1, 2, 2, 8, 3, 8, 104, ATTNGEN_MASK_CAUSAL);
    c.kv_lengths = {0};
    std::vector<float> out;
    REQUIRE(run_attngen(c, out).ok());
    CHECK(all_exactly_zero(out));
}

TEST_CASE("sdpa: long causal sequence (4096 x 4096, D = 64) on sampled rows", "[attention][sdpa][numerics][long]") {
    const int L = 4096, D = 64;
    AttnCase c = sdpa(1, 1, 1, L, L, D, 105, ATTNGEN_MASK_CAUSAL);
    std::vector<float> out;
    const Status status = run_attngen(c, out);
    INFO(status.message);
    REQUIRE(status.ok());
    // Row i of a causal run is a decode step over keys 0..i: evaluate only those rows in the reference.
    for (int i : {0, 1, 2, 63, 64, 65, 127, 1000, 2047, 2048, 3001, 4094, 4095}) {
        AttnCase row = sdpa(1, 1, 1, 1, i + 1, D, 0);
        row.q.assign(c.q.begin() + std::ptrdiff_t(i) * D, c.q.begin() + std::ptrdiff_t(i + 1) * D);
        row.k.assign(c.k.begin(), c.k.begin() + std::ptrdiff_t(i + 1) * D);
        row.v.assign(c.v.begin(), c.v.begin() + std::ptrdiff_t(i + 1) * D);
        INFO("row " << i);
        CHECK_CLOSE(row_of(c, out, 0, 0, i), reference_output(row), kAtol, kRtol);
    }
    bool finite = true;
    for (float x : out)
        finite = finite && std::isfinite(x);
    CHECK(finite);
}

// ---- empty extents ------------------------------------------------------------------------------

TEST_CASE("sdpa: Lk = 0 gives zeros", "[attention][sdpa][empty]") {
    for (int Lq : {1, 5}) {
        AttnCase c = sdpa(2, 2, 1, Lq, 0, 16, 110);
        std::vector<float> kv(1, 0.f);  // a valid pointer for empty k and v
        std::vector<float> out(c.q_size(), std::numeric_limits<float>::quiet_NaN());
        RunInfo info{};
        const Status status =
            attngen::attention(q_tensor(c), tensor(kv.data(), {2, 1, 0, 16}), tensor(kv.data(), {2, 1, 0, 16}),
                               out_tensor(c, out), make_desc(c), &info);
        INFO(status.message);
        REQUIRE(status.ok());
        CHECK(all_exactly_zero(out));
    }
}

TEST_CASE("sdpa: Lq = 0 is a no-op", "[attention][sdpa][empty]") {
    AttnCase c = sdpa(1, 2, 2, 0, 7, 16, 111);
    std::vector<float> q(1, 1.f), out(4, 123.f);
    const Status status = attngen::attention(tensor(q.data(), {1, 2, 0, 16}), k_tensor(c), v_tensor(c),
                                             tensor(out.data(), {1, 2, 0, 16}), make_desc(c));
    INFO(status.message);
    REQUIRE(status.ok());
    CHECK(out == std::vector<float>(4, 123.f));
}

TEST_CASE("sdpa: batch = 0 and heads = 0 are no-ops", "[attention][sdpa][empty]") {
    std::vector<float> buf(4, 5.f);
    const attngen_attention_desc desc = attention_desc();
    CHECK(attngen::attention(tensor(buf.data(), {0, 2, 3, 8}), tensor(buf.data(), {0, 2, 3, 8}),
                             tensor(buf.data(), {0, 2, 3, 8}), tensor(buf.data(), {0, 2, 3, 8}), desc)
              .ok());
    CHECK(buf == std::vector<float>(4, 5.f));
}

// ---- info and side effects ----------------------------------------------------------------------

TEST_CASE("sdpa: run info names the kernel, device and CPU target", "[attention][sdpa][info]") {
    AttnCase prefill = sdpa(1, 2, 2, 8, 8, 16, 120);
    AttnCase decode = sdpa(1, 2, 2, 1, 8, 16, 121);
    std::vector<float> out;
    RunInfo info{};
    REQUIRE(run_attngen(prefill, out, &info).ok());
    CHECK(std::string(info.kernel) == "attngen_sdpa_prefill_cpu");
    CHECK(std::string(info.device) == "cpu");
    CHECK(std::string(info.cpu_target).rfind("x86-64-linux", 0) == 0);
    REQUIRE(run_attngen(decode, out, &info).ok());
    CHECK(std::string(info.kernel) == "attngen_sdpa_decode_cpu");
    CHECK(std::string(info.device) == "cpu");
    // Null info and null error buffer are allowed.
    const attngen_attention_desc desc = make_desc(decode);
    const Tensor q = q_tensor(decode), k = k_tensor(decode), v = v_tensor(decode), o = out_tensor(decode, out);
    CHECK(attngen_attention(&q, &k, &v, &o, &desc, nullptr, nullptr, 0) == ATTNGEN_OK);
    CHECK_CLOSE(out, reference_output(decode), kAtol, kRtol);
}

namespace {

bool listed(const std::string &list, int64_t value) {
    std::stringstream in(list);
    for (std::string item; std::getline(in, item, ',');) {
        if (!item.empty() && std::stoll(item) == value) return true;
    }
    return false;
}

// The kernel the runtime should pick: the fixed head_dim kernel where the build has a fast path for
// it on the CPU variant that runs (x86 variants without AVX2 only with ATTNGEN_FALLBACK_FAST_HEAD_DIMS),
// the generic kernel otherwise.
std::string expected_kernel(const std::string &family, int64_t head_dim, const std::string &cpu_target) {
    const bool x86_fallback = cpu_target.rfind("x86", 0) == 0 && cpu_target.find("-avx2") == std::string::npos;
    const bool fast = listed(ATTNGEN_TEST_FAST_HEAD_DIMS, head_dim) &&
                      (!x86_fallback || listed(ATTNGEN_TEST_FALLBACK_FAST_HEAD_DIMS, head_dim));
    return fast ? family + "_d" + std::to_string(head_dim) : family;
}

}  // namespace

// Run once per CPU variant by CTest with ATTNGEN_CPU_VARIANT set: the dispatcher must run (and
// report) exactly that variant, with the fixed head_dim kernel where that variant has one, and its
// results must match the reference.
// The second pass finds every kernel in the runtime's memo of lookups (requests alternate between passes).
TEST_CASE("dispatch: the capped CPU variant runs and matches the reference", "[cpu_variant]") {
    const char *cap = std::getenv("ATTNGEN_CPU_VARIANT");
    for (int pass = 0; pass < 2; pass++) {
        for (const attngen_mask mask : {ATTNGEN_MASK_NONE, ATTNGEN_MASK_CAUSAL}) {
            for (const int64_t head_dim : {64, 128, 40}) {
                for (const int64_t q_len : {1, 37}) {
                    AttnCase c = sdpa(2, 4, 2, q_len, 53, head_dim, 130, mask);
                    std::vector<float> out;
                    RunInfo info{};
                    REQUIRE(run_attngen(c, out, &info).ok());
                    INFO("pass " << pass << ", variant " << info.cpu_target << ", D " << head_dim << ", Lq " << q_len);
                    if (cap && *cap) CHECK(std::string(info.cpu_target) == cap);
                    const std::string family = q_len == 1 ? "attngen_sdpa_decode_cpu" : "attngen_sdpa_prefill_cpu";
                    CHECK(std::string(info.kernel) == expected_kernel(family, head_dim, info.cpu_target));
                    CHECK_CLOSE(out, reference_output(c), kAtol, kRtol);
                }
            }
        }
    }
}

// More distinct requests (scheme, shape class, head dim) than the runtime's memo of kernel lookups keeps
// (1024): it starts over, and every call still runs the kernel for its request.
TEST_CASE("dispatch: kernel lookups stay right past the bound of their memo", "[attention][dispatch]") {
    int calls = 0;
    for (const attngen_scheme scheme : {ATTNGEN_SCHEME_SDPA, ATTNGEN_SCHEME_ALIBI, ATTNGEN_SCHEME_SDPA}) {
        for (int head_dim = 1; head_dim <= 256; head_dim++) {
            for (const int q_len : {1, 3}) {
                AttnCase c = sdpa(1, 2, 2, q_len, 5, head_dim, 140 + head_dim);
                if (scheme == ATTNGEN_SCHEME_ALIBI) set_alibi(c);
                std::vector<float> out;
                RunInfo info{};
                REQUIRE(run_attngen(c, out, &info).ok());
                calls++;
                const std::string family = std::string("attngen_") +
                                           (scheme == ATTNGEN_SCHEME_ALIBI ? "alibi" : "sdpa") +
                                           (q_len == 1 ? "_decode_cpu" : "_prefill_cpu");
                INFO("call " << calls << ": " << c.describe());
                CHECK(std::string(info.kernel) == expected_kernel(family, head_dim, info.cpu_target));
                CHECK_CLOSE(out, reference_output(c), kAtol, kRtol);
            }
        }
    }
}

TEST_CASE("sdpa: inputs are not modified and results are deterministic", "[attention][sdpa]") {
    AttnCase c = sdpa(2, 4, 2, 13, 21, 32, 122, ATTNGEN_MASK_CAUSAL);
    const AttnCase copy = c;
    std::vector<float> a, b;
    REQUIRE(run_attngen(c, a).ok());
    REQUIRE(run_attngen(c, b).ok());
    CHECK(c.q == copy.q);
    CHECK(c.k == copy.k);
    CHECK(c.v == copy.v);
    CHECK(std::memcmp(a.data(), b.data(), a.size() * sizeof(float)) == 0);
}

TEST_CASE("sdpa: batches and heads are independent", "[attention][sdpa]") {
    // Changing batch 1's inputs leaves batch 0's output bit-identical.
    AttnCase c = sdpa(2, 2, 2, 6, 9, 16, 123, ATTNGEN_MASK_CAUSAL);
    std::vector<float> a, b;
    REQUIRE(run_attngen(c, a).ok());
    for (std::size_t n = c.q_size() / 2; n < c.q_size(); n++)
        c.q[n] = -c.q[n];
    for (std::size_t n = c.kv_size() / 2; n < c.kv_size(); n++)
        c.v[n] *= 3.f;
    REQUIRE(run_attngen(c, b).ok());
    const std::size_t half = c.q_size() / 2;
    CHECK(std::vector<float>(a.begin(), a.begin() + std::ptrdiff_t(half)) ==
          std::vector<float>(b.begin(), b.begin() + std::ptrdiff_t(half)));
    CHECK_MATCHES_REFERENCE(c);
}

TEST_CASE("attention: concurrent calls from several threads", "[attention][threads]") {
    // Different schemes and shapes at once: each thread's results equal its single-threaded results.
    std::vector<AttnCase> cases;
    const attngen_scheme schemes[] = {ATTNGEN_SCHEME_SDPA, ATTNGEN_SCHEME_ALIBI, ATTNGEN_SCHEME_T5,
                                      ATTNGEN_SCHEME_ROPE};
    for (int n = 0; n < 4; n++) {
        AttnCase c = random_case(1200 + n, {16, 64});
        set_random_scheme(c, schemes[n], 1200 + n);
        cases.push_back(c);
    }
    std::vector<std::vector<float>> expected(cases.size());
    for (std::size_t n = 0; n < cases.size(); n++)
        REQUIRE(run_attngen(cases[n], expected[n]).ok());
    std::vector<int> mismatches(cases.size(), 0), failures(cases.size(), 0);
    std::vector<std::thread> threads;
    for (std::size_t n = 0; n < cases.size(); n++) {
        threads.emplace_back([&, n] {
            for (int repeat = 0; repeat < 20; repeat++) {
                std::vector<float> out;
                if (!run_attngen(cases[n], out).ok()) {
                    failures[n]++;
                } else if (std::memcmp(out.data(), expected[n].data(), out.size() * sizeof(float)) != 0) {
                    mismatches[n]++;
                }
            }
        });
    }
    for (std::thread &t : threads)
        t.join();
    for (std::size_t n = 0; n < cases.size(); n++) {
        INFO(cases[n].describe());
        CHECK(failures[n] == 0);
        CHECK(mismatches[n] == 0);
        CHECK_CLOSE(expected[n], reference_output(cases[n]), kAtol, kRtol);
    }
}

namespace {

// The transparent-huge-page mode ("always", "madvise", "never"), or "" where the system does not say.
std::string thp_mode() {
    std::ifstream file("/sys/kernel/mm/transparent_hugepage/enabled");
    std::string text;
    std::getline(file, text);
    const size_t open = text.find('['), close = text.find(']');
    return open == std::string::npos || close == std::string::npos ? "" : text.substr(open + 1, close - open - 1);
}

// Whether the mapping holding `address` may use transparent huge pages (/proc/self/smaps "THPeligible"),
// or -1 where smaps does not say.
int thp_eligible(const void *address) {
    std::ifstream smaps("/proc/self/smaps");
    const auto target = reinterpret_cast<std::uintptr_t>(address);
    bool inside = false;
    std::string line;
    while (std::getline(smaps, line)) {
        unsigned long long start = 0, end = 0;
        if (std::sscanf(line.c_str(), "%llx-%llx ", &start, &end) == 2) {  // a mapping's header line
            inside = target >= start && target < end;
        } else if (inside && line.rfind("THPeligible:", 0) == 0) {
            return std::atoi(line.c_str() + std::strlen("THPeligible:"));
        }
    }
    return -1;
}

}  // namespace

TEST_CASE("attngen_alloc: aligned blocks, huge-page blocks, and failures as NULL", "[attention][memory]") {
    CHECK(attngen_alloc(0) == nullptr);
    CHECK(attngen_alloc(SIZE_MAX) == nullptr);      // rounding up would overflow
    CHECK(attngen_alloc(SIZE_MAX / 2) == nullptr);  // more than any machine has
    attngen_free(nullptr);
    const std::string mode = thp_mode();
    for (const size_t bytes :
         {size_t(1), size_t(100), size_t(64) << 10, (size_t(2) << 20) - 4, size_t(2) << 20, (size_t(5) << 20) + 12}) {
        INFO("bytes " << bytes);
        auto *block = static_cast<unsigned char *>(attngen_alloc(bytes));
        REQUIRE(block != nullptr);
        const size_t alignment = bytes >= (size_t(2) << 20) ? size_t(2) << 20 : 64;
        CHECK(reinterpret_cast<std::uintptr_t>(block) % alignment == 0);
        for (size_t n = 0; n < bytes; n++)
            block[n] = static_cast<unsigned char>(n * 7);
        size_t wrong = 0;
        for (size_t n = 0; n < bytes; n++)
            wrong += block[n] != static_cast<unsigned char>(n * 7);
        CHECK(wrong == 0);
        // Blocks of 2 MiB or more are advised as huge pages: where THP waits for that advice (or is always on)
        // the kernel must report their mapping eligible.
        if (bytes >= (size_t(2) << 20) && (mode == "madvise" || mode == "always")) {
            const int eligible = thp_eligible(block);
            INFO("THP mode " << mode << ", THPeligible " << eligible);
            if (eligible == -1)
                WARN("/proc/self/smaps has no THPeligible field: the advice is not checked");
            else
                CHECK(eligible == 1);
        }
        attngen_free(block);
    }
    // The control: in "madvise" mode a block from malloc, without the advice, is not eligible (so the
    // smaps reading above tells the two apart).
    if (mode == "madvise") {
        void *plain = std::malloc(size_t(4) << 20);
        REQUIRE(plain != nullptr);
        std::memset(plain, 1, size_t(4) << 20);
        const int eligible = thp_eligible(plain);
        if (eligible != -1) CHECK(eligible == 0);
        std::free(plain);
    }
    // A kernel reads tensors in such memory like any other (decode over a 2 MiB+ K/V cache).
    AttnCase c = sdpa(1, 8, 2, 1, 2048, 128, 43);
    std::vector<float, attngen::Allocator<float>> k(c.k.begin(), c.k.end()), v(c.v.begin(), c.v.end());
    REQUIRE(k.size() * sizeof(float) >= (size_t(2) << 20));
    CHECK(reinterpret_cast<std::uintptr_t>(k.data()) % (size_t(2) << 20) == 0);
    std::vector<float> out(c.q.size());
    attngen_attention_desc desc = attngen::attention_desc();
    const attngen::Status status = attngen::attention(
        attngen::tensor(c.q.data(), {1, 8, 1, 128}), attngen::tensor(k.data(), {1, 2, 2048, 128}),
        attngen::tensor(v.data(), {1, 2, 2048, 128}), attngen::tensor(out.data(), {1, 8, 1, 128}), desc);
    REQUIRE(status.ok());
    CHECK_CLOSE(out, reference_output(c), kAtol, kRtol);
}

TEST_CASE("attention: cached kernel temporaries are reused and can be released", "[attention][memory]") {
    const AttnCase c = sdpa(1, 8, 8, 256, 256, 64, 41);
    CHECK_MATCHES_REFERENCE(c);  // a prefill whose temporaries come from the block cache
    CHECK(attngen_release_cached_memory() > 0);
    CHECK(attngen_release_cached_memory() == 0);  // nothing left to release
    CHECK_MATCHES_REFERENCE(c);                   // allocates afresh after the release
}
