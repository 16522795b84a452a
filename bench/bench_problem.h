// attngen-bench: one benchmark configuration (scheme x mask x shape), its inputs and the derived
// per-problem tables every implementation shares (rotation tables, bucket indices), the flop and
// byte counts, and the double-precision reference rows used to validate each implementation.
#pragma once

#include "attngen/attngen.hpp"

#include <cstddef>
#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

namespace attngen_bench {

// Every buffer a kernel, baseline or probe reads or writes comes from attngen_alloc: it starts on a cache
// line (64 bytes), as a tensor library's allocations do (std::vector's storage, 16-byte aligned, splits
// every other 64-byte vector load across two lines: AOT, Intel Xeon (family 6 model 207), plain prefill
// 0.77-0.88x the speed on aligned inputs), and blocks of 2 MiB or more are advised as huge pages.
template <typename T>
using AlignedVector = std::vector<T, attngen::Allocator<T>>;
using Floats = AlignedVector<float>;

enum class SchemeId { Sdpa, Alibi, T5, Shaw, Txl, Deberta, RopeHalf, RopeInterleaved, Xpos };

const std::vector<SchemeId> &all_schemes();
const char *scheme_name(SchemeId s);  // sdpa, alibi, t5, shaw, txl, deberta, rope_half, rope_interleaved, xpos

struct Shape {
    int batch = 1, heads = 1, kv_heads = 1, q_len = 1, k_len = 1, head_dim = 64;
    bool decode() const { return q_len == 1; }
    std::string name() const;  // BxHxLqxLkxD, then _kvN when Hkv != H
};

struct Config {
    SchemeId scheme = SchemeId::Sdpa;
    bool causal = false;
    Shape shape;
    // <scheme>/<mask>/<B>x<H>x<Lq>x<Lk>x<D>
    std::string name() const;
};

// Scheme parameters used by every configuration (realistic model settings).
constexpr int kT5Buckets = 32, kT5MaxDistance = 128;
constexpr int kShawClip = 16;  // K: 2K+1 = 33 relative key / value rows
constexpr int kDebertaSpan = 256, kDebertaBucketSize = 256, kDebertaMaxPosition = 512;
constexpr double kRopeBase = 10000.0, kXposScaleBase = 512.0;

// Flops counted for a configuration (see flops() in bench_problem.cpp for the counting rules).
double flops(const Config &c);
// flops() plus the scheme's extra content-position products (Shaw, TXL, DeBERTa); == flops() otherwise.
double flops_with_extra(const Config &c);
bool has_extra_flops(SchemeId s);
// Bytes of K and V read once: B * Hkv * Lk * D * 4 * 2.
double kv_bytes(const Config &c, double bytes_per_element = 4.0);

// One validation row: the reference output of query row (b, h, i) in double precision.
struct RefRow {
    int b = 0, h = 0, i = 0;
    std::vector<double> out;  // [D]
};

struct Problem {
    Config config;
    int B = 0, H = 0, Hkv = 0, Lq = 0, Lk = 0, D = 0;
    int group = 1;    // H / Hkv: query head h reads kv head h / group
    int offset = 0;   // Lk - Lq: query row i sits at position p_i = offset + i
    float scale = 0;  // effective scale (the kernel's default for the scheme)

    Floats q, k, v;  // [B,H,Lq,D], [B,Hkv,Lk,D], [B,Hkv,Lk,D]

    // ALiBi: slopes [H] (the paper's rule, rounded to float like the runtime does), symmetric for
    // bidirectional (mask none) problems, -slope*(p_i - j) for causal ones.
    Floats alibi_slopes;
    bool alibi_symmetric = false;
    // T5: table [buckets, H]; bidirectional (encoder) buckets for mask none, decoder buckets for causal.
    Floats t5_table;
    bool t5_bidirectional = true;
    // Shaw: tables [2K+1, D] shared by all heads.
    Floats shaw_keys, shaw_values;
    // Transformer-XL: r [H, Lk, D], u and v [H, D]; memory length = Lk - Lq.
    Floats txl_r, txl_u, txl_v;
    // DeBERTa: pos_key, pos_query [H, 2*span, D].
    Floats deberta_pos_key, deberta_pos_query;
    // RoPE parameters (pairing, base).
    attngen_rope_params rope{};
    int xpos_centre = 0;  // floor(-Lk / 2), the runtime's default

    // ---- derived, computed once at set-up (not timed) ----
    // RoPE / xPos: cos and sin per (position row, frequency), float32 like the kernels compute them;
    // xPos folds its decay in (queries * zeta^e, keys / zeta^e). q tables [Lq, D/2], k tables [Lk, D/2].
    Floats q_cos, q_sin, k_cos, k_sin;
    bool rotary_interleaved = false;
    // Integer index per relative distance delta = j - p_i, stored at [delta + Lk - 1] (2*Lk - 1 entries):
    // T5 bucket, DeBERTa table row clamp(bucket(p_i - j) + span, 0, 2span - 1).
    std::vector<int32_t> t5_bucket_of_delta, deberta_row_of_delta;

    int query_position(int i) const { return offset + i; }
    // Keys a causal row may see: j < visible_keys(i); all Lk when not causal.
    int visible_keys(int i) const { return config.causal ? query_position(i) + 1 : Lk; }
    bool rotary() const {
        return config.scheme == SchemeId::RopeHalf || config.scheme == SchemeId::RopeInterleaved ||
               config.scheme == SchemeId::Xpos;
    }
    // Whether the scheme adds a positional term to the logits (a dense bias in the unfused baselines).
    bool has_positional_bias() const;
    std::size_t q_size() const { return std::size_t(B) * H * Lq * D; }
    std::size_t kv_size() const { return std::size_t(B) * Hkv * Lk * D; }
    const float *q_head(int b, int h) const { return q.data() + (std::size_t(b) * H + h) * Lq * D; }
    const float *k_head(int b, int kvh) const { return k.data() + (std::size_t(b) * Hkv + kvh) * Lk * D; }
    const float *v_head(int b, int kvh) const { return v.data() + (std::size_t(b) * Hkv + kvh) * Lk * D; }
    int t5_bucket(int delta) const { return t5_bucket_of_delta[std::size_t(delta + Lk - 1)]; }
    int deberta_row(int delta) const { return deberta_row_of_delta[std::size_t(delta + Lk - 1)]; }
    int shaw_row(int delta) const {
        return (delta < -kShawClip ? -kShawClip : delta > kShawClip ? kShawClip : delta) + kShawClip;
    }
    int txl_row(int delta) const {  // R row Lk - 1 - (p_i - j), future keys clamped to the last row
        const int t = Lk - 1 + delta;
        return t < 0 ? 0 : t > Lk - 1 ? Lk - 1 : t;
    }

    // Rotates one row of D channels (RoPE pairing or xPos) with table row `row` of (cos, sin).
    template <typename T>
    void rotate_row(const float *x, const float *cos_row, const float *sin_row, T *out) const;

    // The reference rows (computed on first use, thread-safe).
    const std::vector<RefRow> &reference_rows() const;

    mutable std::once_flag ref_once;
    mutable std::vector<RefRow> ref_rows;
};

// Builds a problem with seeded uniform inputs and the scheme's tables; throws on bad arguments.
std::unique_ptr<Problem> make_problem(const Config &c, uint64_t seed = 1);
// The attngen descriptor (device CPU). Tensors point into the problem.
attngen_attention_desc make_desc(const Problem &p);

// The problem of a configuration, cached: the same Config returns the same object until another is asked for.
std::shared_ptr<const Problem> cached_problem(const Config &c);

// Compares an output [B,H,Lq,D] against the reference rows: max |got - want| and whether every element
// satisfies |got - want| <= atol + rtol |want|. `text` describes the worst element.
struct Check {
    bool ok = true;
    double max_abs = 0;
    std::string text;
};
// bf16: outputs of bfloat16 inputs carry bf16 rounding (8 significant bits): atol = rtol = 5e-2.
Check check_output(const Problem &p, const float *out, bool bf16 = false);

template <typename T>
void Problem::rotate_row(const float *x, const float *cos_row, const float *sin_row, T *out) const {
    if (rotary_interleaved) {
        for (int f = 0; f < D / 2; f++) {
            const T x0 = T(x[2 * f]), x1 = T(x[2 * f + 1]), c = T(cos_row[f]), s = T(sin_row[f]);
            out[2 * f] = x0 * c - x1 * s;
            out[2 * f + 1] = x1 * c + x0 * s;
        }
    } else {
        const int half = D / 2;
        for (int f = 0; f < half; f++) {
            const T x0 = T(x[f]), x1 = T(x[f + half]), c = T(cos_row[f]), s = T(sin_row[f]);
            out[f] = x0 * c - x1 * s;
            out[f + half] = x1 * c + x0 * s;
        }
    }
}

}  // namespace attngen_bench
