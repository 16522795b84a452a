// attngen::ref -- plain double-precision reference implementation of attention with the
// positional schemes of the conformance contract (shared/conformance/README.md).
//
// Clarity over speed: straightforward loops, one score row (length k_len) in flight at a time.
// Only the standard library is used. Every function throws std::invalid_argument on inconsistent
// input (wrong tensor sizes, heads not divisible by kv_heads, odd rotary dims, ...).
//
// Conventions shared by all schemes
//   * q is [B, H, Lq, D], k and v are [B, Hkv, Lk, D], all row-major.
//   * Query row i sits at absolute position p_i = k_len - q_len + i (bottom-right alignment);
//     key j sits at position j. Masks and relative distances always use these index positions
//     (explicit RoPE / xPos positions only change the rotation / decay, never the mask).
//   * Causal: allowed iff j <= p_i. SlidingWindow: allowed iff j <= p_i and p_i - j < window.
//     kv_len (per batch, optional): keys j >= kv_len[b] are masked in addition.
//   * GQA/MQA: query head h reads kv head h / (H / Hkv) (repeat_interleave over heads).
//   * Softmax in double over the allowed keys; masked entries get probability exactly 0; a row
//     with no allowed key yields an all-zero probability row and an all-zero output row.
//   * scale <= 0 selects the scheme's default: 1/sqrt(D) (Sdpa, Alibi, Shaw, TransformerXL, Rope,
//     Xpos), 1 (T5: no scaling), 1/sqrt(3D) (Deberta).
#pragma once

#include <variant>
#include <vector>

namespace attngen::ref {

enum class Mask { None, Causal, SlidingWindow };
enum class Pairing { Half, Interleaved };  // Llama/NeoX rotate_half vs GPT-J/xPos rotate_every_two

struct Problem {
    int batch = 1, heads = 1, kv_heads = 1, q_len = 1, k_len = 1, head_dim = 1;
    std::vector<double> q, k, v;  // row-major [B,H,Lq,D] and [B,Hkv,Lk,D]
    Mask mask = Mask::None;
    int window = 0;           // SlidingWindow: allowed iff j <= p_i and p_i - j < window
    std::vector<int> kv_len;  // per batch valid keys (keys j >= kv_len[b] masked); empty = k_len
    double scale = 0;         // <= 0: the scheme's default
};

// ---- schemes -------------------------------------------------------------------------------

struct Sdpa {};

// score = scale*q.k - slope_h*(p_i - j)   (or - slope_h*|p_i - j| when symmetric), bias added
// after scaling. slopes has `heads` entries (see alibi_slopes).
struct Alibi {
    std::vector<double> slopes;
    bool symmetric = false;
};

// score = scale*q.k + table[bucket(j - p_i), h]; table is [num_buckets, H]; default scale 1.
struct T5 {
    std::vector<double> table;
    int num_buckets = 32, max_distance = 128;
    bool bidirectional = true;
};

// Shaw et al. / tensor2tensor. Tables [2K+1, D] shared by all heads, idx = clip(j - p_i, -K, K) + K.
// score = scale*(q_i.(k_j + rel_keys[idx])); out_i = sum_j p_ij (v_j + rel_values[idx]).
// rel_values may be empty (no value term).
struct Shaw {
    int clip = 1;
    std::vector<double> rel_keys, rel_values;
};

// Transformer-XL relative attention. r: [H, Lk, D], row t encodes distance Lk-1-t; u, v: [H, D].
// score = scale*((q_i+u).k_j + (q_i+v).r[Lk-1-(p_i-j)]), p_i = Lk - Lq + i (memory length Lk-Lq).
// For non-causal use, entries with j > p_i would need row index > Lk-1: the row index is clamped
// to Lk-1 (distance 0). The reference itself only defines allowed (j <= p_i) entries.
struct TransformerXL {
    std::vector<double> r, u, v;
};

// DeBERTa disentangled attention (c2p + p2c). pos_key/pos_query: [H, 2*span, D].
// rel = p_i - j (query minus key), log-bucketed with deberta_log_bucket when bucket_size > 0 and
// max_position > 0; idx = clamp(rel + span, 0, 2*span-1) for both c2p and p2c.
// score = scale*(q_i.k_j + q_i.pos_key[idx] + k_j.pos_query[idx]); default scale 1/sqrt(3D).
struct Deberta {
    std::vector<double> pos_key, pos_query;
    int span = 0;
    int bucket_size = 0;
    int max_position = 0;
};

// Rotary position embedding on the first rot_dim channels of q and k (the rest pass through).
// angle = pos * inv_freq[c]; cos/sin are multiplied by attention_factor.
//   Half:        x'[c] = x[c] cos - x[c+R/2] sin,  x'[c+R/2] = x[c+R/2] cos + x[c] sin   (c < R/2)
//   Interleaved: x'[2c] = x[2c] cos - x[2c+1] sin,  x'[2c+1] = x[2c+1] cos + x[2c] sin
// rot_dim 0 -> D; inv_freq must have rot_dim/2 entries (empty -> rope_inv_freq(rot_dim, 10000)).
// q_positions [B, Lq], k_positions [B, Lk] (doubles holding integers); empty -> p_i and j.
struct Rope {
    Pairing pairing = Pairing::Half;
    int rot_dim = 0;
    std::vector<double> inv_freq;
    std::vector<double> q_positions, k_positions;
    double attention_factor = 1;
};

// xPos (torchscale XPOS): interleaved rotation with theta_i = 10000^(-i/(D/2)) (i < D/2), angle
// n*theta_i, decay s_i(n) = zeta_i^((n + centre)/scale_base), zeta_i = (2i + 0.4D)/(1.4D);
// queries are multiplied by s, keys by 1/s. Positions default to p_i / j.
// centre: torchscale's min_pos = -N // 2 (floor) with N = k_len for both calls. centre == 0 means
// "default" = floor(-k_len/2) (0 is never a torchscale min_pos for N >= 1).
struct Xpos {
    double scale_base = 512;
    std::vector<double> q_positions, k_positions;
    double centre = 0;
};

using Scheme = std::variant<Sdpa, Alibi, T5, Shaw, TransformerXL, Deberta, Rope, Xpos>;

std::vector<double> attention(const Problem &, const Scheme &);      // out [B,H,Lq,D]
std::vector<double> probabilities(const Problem &, const Scheme &);  // probs [B,H,Lq,Lk] (masked = 0)

// ---- helpers (additions to the core API) --------------------------------------------------------

// The scale actually used: p.scale if > 0, else the scheme's default for head_dim.
double effective_scale(const Problem &, const Scheme &);
// Mask predicate for query row i / key j of batch b (positions as above).
bool is_allowed(const Problem &, int b, int i, int j);

// Rotated / decayed q and k as used inside attention(): q' [B,H,Lq,D], k' [B,Hkv,Lk,D].
// For Rope these are HF's q_rot / k_rot; for Xpos torchscale's q_xpos / k_xpos (before scaling).
struct TransformedQK {
    std::vector<double> q, k;
};
TransformedQK rope_apply(const Problem &, const Rope &);
TransformedQK xpos_apply(const Problem &, const Xpos &);

// ---- positional functions ---------------------------------------------------------------------

// ALiBi get_slopes(n) (ofirpress/attention_with_linear_biases), evaluated exactly like the Python:
// power of two: start = 2^(-2^-(log2 n - 3)), slope_h = start * start^h; otherwise
// slopes(c) ++ slopes(2c)[0::2][:n-c] with c = 2^floor(log2 n).
std::vector<double> alibi_slopes(int heads);

// HF T5Attention._relative_position_bucket. relative_position = key - query (j - p_i).
// The log branch is evaluated in float32 like torch (float(rel)/float(max_exact), logf, divided by
// float(log(max_distance/max_exact)), times float(num_buckets - max_exact)), truncated toward zero,
// then min(.., num_buckets-1) (num_buckets already halved when bidirectional).
int t5_bucket(int relative_position, bool bidirectional, int num_buckets, int max_distance);

// DeBERTa da_utils.make_log_bucket_position (microsoft/DeBERTa, torch "faster version"):
// rel clamped to [-(max_position-1), max_position-1]; mid = bucket_size/2;
// |rel| <= mid -> rel; else sign(rel) * (ceil(log(|rel|/mid) / log((max_position-1)/mid) * (mid-1)) + mid).
// Precision: the reference evaluates log_pos in float32 (int64 tensor / int -> float32, torch.log,
// divided by the Python double log((max_position-1)/mid) cast to float32); mirrored here in float32.
// (For bucket/max 256/512 and 8/32 float32 and float64 give identical buckets on all inputs.)
int deberta_log_bucket(int relative_position, int bucket_size, int max_position);

// inv_freq[c] = 1 / base^(2c/rot_dim), c < rot_dim/2.
std::vector<double> rope_inv_freq(int rot_dim, double base);
// Linear scaling: rope_inv_freq(...) / factor.
std::vector<double> rope_inv_freq_linear(int rot_dim, double base, double factor);
// Dynamic NTK: base' = base*((factor*seq_len/mpe) - (factor-1))^(rot_dim/(rot_dim-2)) only if
// seq_len > mpe (seq_len = max(position_ids)+1), else the default frequencies.
std::vector<double> rope_inv_freq_dynamic_ntk(int rot_dim, double base, double factor, int max_position_embeddings,
                                              int seq_len);
// Llama 3.1 piecewise-by-wavelength scaling (HF _compute_llama3_parameters); attention_factor = 1.
std::vector<double> rope_inv_freq_llama3(int rot_dim, double base, double factor, double low_freq_factor,
                                         double high_freq_factor, int original_max_position_embeddings);
// HF _compute_yarn_parameters (transformers @0044e3b3). beta_fast / beta_slow == 0 -> 32 / 1 (the
// Python `or` default). The correction range uses original_max_position_embeddings.
// *attention_factor_out (if non-null) receives 0.1*ln(factor) + 1.
std::vector<double> rope_inv_freq_yarn(int rot_dim, double base, double factor, int original_max_position_embeddings,
                                       double beta_fast, double beta_slow, double *attention_factor_out);

enum class SinusoidConvention { PaperInterleaved, Tensor2TensorConcat, TransformerXLConcat };
// Row-major [length, sinusoid_columns(conv, channels)], positions 0..length-1.
//   PaperInterleaved (pytorch/examples): [sin, cos, sin, cos, ...], w_i = exp(2i * -ln(10000)/d);
//     odd channels throw std::invalid_argument (the reference raises).
//   Tensor2TensorConcat (get_timing_signal_1d): [sin | cos], r_i = exp(-i*ln(1e4)/max(n-1,1)),
//     n = channels/2, odd channels: trailing zero column.
//   TransformerXLConcat (PositionalEmbedding): [sin | cos], f_i = 1/10000^(2i/d), i < ceil(d/2),
//     so odd d gives d+1 columns.
std::vector<double> sinusoid_table(SinusoidConvention, int length, int channels);
int sinusoid_columns(SinusoidConvention, int channels);  // PaperInterleaved + odd -> throws

}  // namespace attngen::ref
