// Shared helpers of the attngen unit tests: seeded random inputs, one problem described once and
// turned into both an attngen call (tensors + descriptor) and an attngen::ref problem, and
// error measures for comparing float32 kernel output with the double-precision reference.
#pragma once

#include <catch2/catch.hpp>

#include "attngen/attngen.h"
#include "attngen/attngen.hpp"
#include "reference/reference.h"

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

namespace attngen::test {

// ---- random data ----------------------------------------------------------------------------

// n uniform floats in [lo, hi), deterministic for a seed.
std::vector<float> random_floats(std::size_t n, uint64_t seed, float lo = -1.f, float hi = 1.f);
// n uniform ints in [lo, hi], deterministic for a seed.
std::vector<int32_t> random_ints(std::size_t n, uint64_t seed, int32_t lo, int32_t hi);
std::vector<double> to_double(const std::vector<float> &values);
std::vector<double> to_double(const std::vector<int32_t> &values);

// ---- one attention problem, both for attngen and for the reference --------------------------

struct AttnCase {
    int batch = 1, heads = 1, kv_heads = 1, q_len = 1, k_len = 1, head_dim = 16;
    attngen_scheme scheme = ATTNGEN_SCHEME_SDPA;
    attngen_mask mask = ATTNGEN_MASK_NONE;
    int window = 0;
    float scale = 0;  // 0: scheme default
    attngen_device device = ATTNGEN_DEVICE_CPU;

    std::vector<float> q, k, v;                     // contiguous [B,H,Lq,D] and [B,Hkv,Lk,D]
    std::vector<int32_t> kv_lengths;                // empty: no padding
    std::vector<int32_t> q_positions, k_positions;  // RoPE / xPos; empty: defaults

    // ALiBi
    std::vector<float> alibi_slopes;  // empty: the runtime's default (paper rule)
    bool alibi_symmetric = false;
    // T5
    std::vector<float> t5_table;  // [num_buckets, H]
    int t5_num_buckets = 32, t5_max_distance = 128;
    bool t5_bidirectional = true;
    // Shaw
    int shaw_clip = 0;
    std::vector<float> shaw_keys, shaw_values;  // [2K+1, D]; values may be empty
    // Transformer-XL
    std::vector<float> txl_r, txl_u, txl_v;  // [H, Lk, D], [H, D], [H, D]
    // DeBERTa
    int deberta_span = 0, deberta_bucket_size = 0, deberta_max_position = 0;
    std::vector<float> deberta_pos_key, deberta_pos_query;  // [H, 2*span, D]
    // RoPE (rope.inv_freq is not used: frequencies come from base and scaling)
    attngen_rope_params rope{};
    // xPos
    double xpos_scale_base = 512;
    bool xpos_centre_set = false;
    int xpos_centre = 0;  // must be non-zero when set (the reference reads 0 as "default")
    // RoPE / xPos: k holds keys already transformed (desc.keys_rotated); the reference of such a
    // case is the case with raw keys.
    bool keys_rotated = false;

    std::size_t q_size() const;
    std::size_t kv_size() const;
    std::string describe() const;
};

// The built-in schemes, in the enum's order.
inline constexpr attngen_scheme kBuiltInSchemes[] = {ATTNGEN_SCHEME_SDPA, ATTNGEN_SCHEME_ALIBI, ATTNGEN_SCHEME_T5,
                                                     ATTNGEN_SCHEME_SHAW, ATTNGEN_SCHEME_TXL,   ATTNGEN_SCHEME_DEBERTA,
                                                     ATTNGEN_SCHEME_ROPE, ATTNGEN_SCHEME_XPOS};

// q, k, v uniform in [-1, 1) for a seed; the scheme is SDPA until a set_* call below.
AttnCase make_case(int batch, int heads, int kv_heads, int q_len, int k_len, int head_dim, uint64_t seed);

// Scheme set-up: fills the scheme's tables with seeded random values (sizes from the case's shape).
void set_alibi(AttnCase &c, bool explicit_slopes = false, bool symmetric = false, uint64_t seed = 11);
void set_t5(AttnCase &c, int num_buckets = 32, int max_distance = 128, bool bidirectional = true, uint64_t seed = 12);
void set_shaw(AttnCase &c, int clip, bool with_values = true, uint64_t seed = 13);
void set_txl(AttnCase &c, uint64_t seed = 14);
void set_deberta(AttnCase &c, int span, int bucket_size = 0, int max_position = 0, uint64_t seed = 15);
void set_rope(AttnCase &c, attngen_rope_pairing pairing, int rot_dim = 0, double base = 10000.0);
void set_xpos(AttnCase &c, double scale_base = 512.0);

// Fills K and V rows past each batch's kv_lengths (padding, which the kernels must never use) with NaN
// and infinities, as an uninitialized cache may hold.
void poison_padding(AttnCase &c);

// The case restricted to its last `rows` query rows (queries keep their positions: bottom-right).
AttnCase last_query_rows(const AttnCase &c, int rows);
// Row (b, h, i) of a [B, H, Lq, D] output of a case.
std::vector<float> output_row(const AttnCase &c, const std::vector<float> &out, int b, int h, int i);

// A random problem for sweeps, deterministic for a seed: batch 1..3, GQA groups, Lq = 1 (decode)
// about a quarter of the time, Lq and Lk in 1..40 independently (so Lq > Lk occurs), any mask,
// sometimes kv_lengths padding (0 included) and an explicit scale. head_dim is drawn from head_dims.
AttnCase random_case(uint64_t seed, const std::vector<int> &head_dims);
// Sets a scheme with random valid parameters for the case's shape (deterministic for a seed).
// For xPos the head dim must be even; for RoPE >= 2.
void set_random_scheme(AttnCase &c, attngen_scheme scheme, uint64_t seed);

// The attngen descriptor of a case. Its tensors point into the case's vectors: keep the case alive
// and unmodified while the descriptor is in use.
attngen_attention_desc make_desc(const AttnCase &c);
// The reference problem and scheme of a case.
ref::Problem ref_problem(const AttnCase &c);
ref::Scheme ref_scheme(const AttnCase &c);
std::vector<double> reference_output(const AttnCase &c);
// RoPE frequencies of a case computed by the reference functions (double), and the attention factor.
std::vector<double> reference_inv_freq(const attngen_rope_params &rope, int head_dim, int seq_len,
                                       double *attention_factor = nullptr);

// Runs attngen on a case with contiguous tensors. `out` is resized to q_size() and pre-filled with
// NaN, so an element the kernel does not write fails any comparison.
Status run_attngen(const AttnCase &c, std::vector<float> &out, RunInfo *info = nullptr);
// Runs attngen on caller-made views with the case's descriptor.
Status run_views(const AttnCase &c, const Tensor &q, const Tensor &k, const Tensor &v, const Tensor &out,
                 RunInfo *info = nullptr);

// Contiguous [d0,d1,d2,d3] views of a case's tensors.
Tensor q_tensor(const AttnCase &c);
Tensor k_tensor(const AttnCase &c);
Tensor v_tensor(const AttnCase &c);
Tensor out_tensor(const AttnCase &c, std::vector<float> &out);

// ---- strided layouts -------------------------------------------------------------------------

// Copies a contiguous rank-4 array into `storage` at element offsets given by strides, or back.
void scatter4(const std::vector<float> &dense, const int64_t shape[4], const int64_t strides[4],
              std::vector<float> &storage);
std::vector<float> gather4(const std::vector<float> &storage, const int64_t shape[4], const int64_t strides[4]);

// ---- error measures ---------------------------------------------------------------------------

// Element-wise |got - want| <= atol + rtol * |want| (numpy.allclose); non-finite `got` fails.
struct Comparison {
    bool ok = true;
    std::size_t count = 0, failures = 0, worst = 0;
    double max_abs = 0, max_rel = 0;
    double got_at_worst = 0, want_at_worst = 0;
    std::string text;  // a readable summary for INFO
};
Comparison compare(const std::vector<float> &got, const std::vector<double> &want, double atol, double rtol);
Comparison compare(const std::vector<float> &got, const std::vector<float> &want, double atol, double rtol);
double max_abs_error(const std::vector<float> &got, const std::vector<double> &want);
double max_rel_error(const std::vector<float> &got, const std::vector<double> &want);

// Whether a kernel for a device is in this build (attngen_kernel_list mentions it).
bool build_has_device(const std::string &device);

// Whether CUDA kernels are built and a CUDA device is present: where the automatic device is CUDA.
bool cuda_runs_here();

constexpr double kAtol = 1e-4, kRtol = 1e-4;

}  // namespace attngen::test

// Checks two float vectors / a float and a double vector elementwise (allclose), with a summary.
#define CHECK_CLOSE(got, want, atol, rtol)                                                                \
    do {                                                                                                  \
        const ::attngen::test::Comparison cmp_ = ::attngen::test::compare((got), (want), (atol), (rtol)); \
        INFO(cmp_.text);                                                                                  \
        CHECK(cmp_.ok);                                                                                   \
    } while (0)

// Runs attngen on a case and checks it against the double reference (CHECK_MATCHES_REFERENCE: atol = rtol = 1e-4).
#define CHECK_MATCHES_REFERENCE_TOL(case_, atol, rtol)                            \
    do {                                                                          \
        const ::attngen::test::AttnCase &c_ = (case_);                            \
        INFO(c_.describe());                                                      \
        std::vector<float> got_;                                                  \
        const ::attngen::Status status_ = ::attngen::test::run_attngen(c_, got_); \
        INFO("attngen status " << int(status_.code) << ": " << status_.message);  \
        REQUIRE(status_.code == ATTNGEN_OK);                                      \
        CHECK_CLOSE(got_, ::attngen::test::reference_output(c_), (atol), (rtol)); \
    } while (0)
#define CHECK_MATCHES_REFERENCE(case_) \
    CHECK_MATCHES_REFERENCE_TOL(case_, ::attngen::test::kAtol, ::attngen::test::kRtol)

// Runs `run_` (a function (case, out) -> Status) on the case with its padding poisoned (poison_padding) and
// checks the output against the reference of the case as given: padding rows must never be used.
#define CHECK_PADDING_IS_NEVER_USED(case_, run_, atol, rtol)                     \
    do {                                                                         \
        ::attngen::test::AttnCase c_ = (case_);                                  \
        const std::vector<double> want_ = ::attngen::test::reference_output(c_); \
        ::attngen::test::poison_padding(c_);                                     \
        std::vector<float> got_;                                                 \
        const ::attngen::Status status_ = run_(c_, got_);                        \
        INFO(c_.describe() << " status " << status_.message);                    \
        REQUIRE(status_.ok());                                                   \
        CHECK_CLOSE(got_, want_, (atol), (rtol));                                \
    } while (0)
