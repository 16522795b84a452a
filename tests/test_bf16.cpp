// bfloat16 kernels: q, k, v and out in bf16, fp32 accumulation and softmax. The reference runs in
// double on the bf16-rounded inputs, so the error is fp32 arithmetic and the output's bf16 rounding
// (relative 2^-9), and on avx512_bf16 dot products the bf16 rounding of the scaled query, of the
// probabilities and of the rows of content-position products (Transformer-XL's q + v; relative 2^-9
// each): checked at atol = rtol = 1e-2.
#include "test_support.h"

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <limits>
#include <string>
#include <vector>

using namespace attngen;
using namespace attngen::test;

namespace {

constexpr double kBf16Tol = 1e-2;

std::vector<uint16_t> to_bits(const std::vector<float> &x) {
    std::vector<uint16_t> bits(x.size());
    for (size_t n = 0; n < x.size(); n++)
        bits[n] = to_bf16(x[n]);
    return bits;
}

// Rounds the case's q, k, v, and the tables that bf16 kernels take in bf16 (Transformer-XL's R,
// DeBERTa's projections, Shaw's aK), to bf16 in place, so the reference sees what the kernel sees.
void round_inputs(AttnCase &c) {
    for (auto *data : {&c.q, &c.k, &c.v, &c.txl_r, &c.deberta_pos_key, &c.deberta_pos_query, &c.shaw_keys}) {
        for (float &x : *data)
            x = from_bf16(to_bf16(x));
    }
}

Status run_bf16_with(const AttnCase &c, const attngen_attention_desc &desc, std::vector<float> &out,
                     RunInfo *info = nullptr) {
    std::vector<uint16_t> q = to_bits(c.q), k = to_bits(c.k), v = to_bits(c.v), o(c.q_size(), 0xffff);
    Status status = attention(bf16_tensor(q.data(), {c.batch, c.heads, c.q_len, c.head_dim}),
                              bf16_tensor(k.data(), {c.batch, c.kv_heads, c.k_len, c.head_dim}),
                              bf16_tensor(v.data(), {c.batch, c.kv_heads, c.k_len, c.head_dim}),
                              bf16_tensor(o.data(), {c.batch, c.heads, c.q_len, c.head_dim}), desc, info);
    out.resize(o.size());
    for (size_t n = 0; n < o.size(); n++)
        out[n] = from_bf16(o[n]);
    return status;
}

Status run_bf16(const AttnCase &c, std::vector<float> &out, RunInfo *info = nullptr) {
    return run_bf16_with(c, make_desc(c), out, info);
}

void check_bf16(AttnCase c) {
    round_inputs(c);
    std::vector<float> out;
    RunInfo info{};
    const Status status = run_bf16(c, out, &info);
    INFO(c.describe() << " status " << status.message);
    REQUIRE(status.ok());
    CHECK(std::string(info.kernel).find("_bf16") != std::string::npos);
    CHECK_CLOSE(out, reference_output(c), kBf16Tol, kBf16Tol);
}

}  // namespace

TEST_CASE("bf16: plain attention over shapes, masks and head dims", "[bf16][sdpa]") {
    for (const attngen_mask mask : {ATTNGEN_MASK_NONE, ATTNGEN_MASK_CAUSAL}) {
        for (const int head_dim : {64, 128, 24}) {
            for (const int q_len : {1, 37}) {
                AttnCase c = make_case(2, 4, 2, q_len, 61, head_dim, 500 + head_dim + q_len);
                c.mask = mask;
                check_bf16(c);
            }
        }
    }
}

TEST_CASE("bf16: every scheme, prefill and decode", "[bf16][schemes]") {
    const attngen_scheme schemes[] = {ATTNGEN_SCHEME_ALIBI, ATTNGEN_SCHEME_T5,      ATTNGEN_SCHEME_SHAW,
                                      ATTNGEN_SCHEME_TXL,   ATTNGEN_SCHEME_DEBERTA, ATTNGEN_SCHEME_ROPE,
                                      ATTNGEN_SCHEME_XPOS};
    for (const attngen_scheme scheme : schemes) {
        for (const int q_len : {1, 29}) {
            AttnCase c = make_case(1, 4, scheme == ATTNGEN_SCHEME_TXL || scheme == ATTNGEN_SCHEME_DEBERTA ? 4 : 2,
                                   q_len, 45, 64, 600 + int(scheme) * 7 + q_len);
            c.mask = ATTNGEN_MASK_CAUSAL;
            set_random_scheme(c, scheme, 700 + int(scheme));
            check_bf16(c);
        }
    }
}

TEST_CASE("bf16: RoPE and xPos decode with grouped query heads over several key chunks", "[bf16][rope][xpos][gqa]") {
    // bf16 keys are rotated per key chunk, once for all the query heads of a KV group in a task.
    for (const attngen_scheme scheme : {ATTNGEN_SCHEME_ROPE, ATTNGEN_SCHEME_XPOS}) {
        for (const int head_dim : {128, 24}) {
            AttnCase c = make_case(2, 8, 2, 1, 1300, head_dim, 820 + int(scheme) + head_dim);
            c.mask = ATTNGEN_MASK_CAUSAL;
            c.kv_lengths = {1300, 517};
            set_random_scheme(c, scheme, 830 + int(scheme));
            check_bf16(c);
        }
    }
}

TEST_CASE("bf16: decode with query heads in blocks of a KV group", "[bf16][decode][gqa]") {
    // The head-block copy of the D = 64 and 128 decode kernels: groups of 8 (two blocks) and of 4.
    const attngen_scheme schemes[] = {ATTNGEN_SCHEME_SDPA, ATTNGEN_SCHEME_ALIBI, ATTNGEN_SCHEME_SHAW,
                                      ATTNGEN_SCHEME_DEBERTA, ATTNGEN_SCHEME_ROPE};
    for (const attngen_scheme scheme : schemes) {
        for (const int head_dim : {64, 128}) {
            for (const int kv_heads : {2, 4}) {
                AttnCase c = make_case(2, 16, kv_heads, 1, 1100, head_dim, 840 + int(scheme) * 5 + head_dim + kv_heads);
                c.mask = ATTNGEN_MASK_CAUSAL;
                c.kv_lengths = {1100, 613};
                if (scheme != ATTNGEN_SCHEME_SDPA) set_random_scheme(c, scheme, 850 + int(scheme));
                check_bf16(c);
            }
        }
    }
}

namespace {

// Whether bf16 decode with D = 64 or 128 should run a dot-product kernel here: the build has them, the
// CPU has avx512_bf16 (and AVX-512) and is AMD's or ATTNGEN_BF16_DOT=1 asks for them, and neither
// ATTNGEN_BF16_DOT=0 nor a capped CPU variant without AVX-512 rules them out.
bool bf16_dot_kernels_expected() {
#if ATTNGEN_TEST_BF16_DOT && (defined(__x86_64__) || defined(__i386__))
    const char *enabled = std::getenv("ATTNGEN_BF16_DOT");
    const std::string choice = enabled ? enabled : "";
    if (choice == "0") return false;
    const char *cap = std::getenv("ATTNGEN_CPU_VARIANT");
    if (cap && *cap && std::string(cap).find("avx512") == std::string::npos) return false;
    return __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bf16") &&
           (choice == "1" || __builtin_cpu_is("amd"));
#else
    return false;
#endif
}

// Whether a bf16 decode call of `scheme` should run a dot-product kernel, given bf16_dot_kernels_expected():
// every scheme but Transformer-XL where the build gave its decode no dot kernels (its entry runs split-K).
bool decode_dot_kernel_expected(bool dot_kernels_expected, attngen_scheme scheme) {
    constexpr bool kTxlDecodeDotKernels = ATTNGEN_TEST_TXL_DECODE_DOT_KERNELS != 0;
    return dot_kernels_expected && (scheme != ATTNGEN_SCHEME_TXL || kTxlDecodeDotKernels);
}

// Runs c in bf16 against the double reference, checking that a *_dot kernel (built for Halide's
// avx512_sapphirerapids target) serves it exactly when dot_kernel_expected.
void check_bf16_run(const AttnCase &c, bool dot_kernel_expected) {
    std::vector<float> out;
    RunInfo info{};
    const Status status = run_bf16(c, out, &info);
    INFO(c.describe() << " kernel " << info.kernel << " status " << status.message);
    REQUIRE(status.ok());
    const std::string kernel = info.kernel;
    const bool dot_kernel = kernel.size() > 4 && kernel.compare(kernel.size() - 4, 4, "_dot") == 0;
    CHECK(dot_kernel == dot_kernel_expected);
    if (dot_kernel) CHECK(std::string(info.cpu_target).find("avx512_sapphirerapids") != std::string::npos);
    CHECK_CLOSE(out, reference_output(c), kBf16Tol, kBf16Tol);
}

}  // namespace

TEST_CASE("bf16: grouped-query decode on avx512_bf16 dot products where the CPU has them", "[bf16][decode][gqa]") {
    // Every scheme, both fixed head dims, several key chunks, lengths that end inside a pair of keys and
    // inside a chunk, and a single key. Where the CPU has avx512_bf16 the dot-product kernel serves them
    // (ctest runs this file again with ATTNGEN_BF16_DOT=0: the widening kernels), but for Transformer-XL
    // where its tuned decode entry runs split-K, without the head blocks the dot products need.
    const bool dot_expected = bf16_dot_kernels_expected();
    for (const attngen_scheme scheme : kBuiltInSchemes) {
        for (const int head_dim : {64, 128}) {
            for (const int k_len : {1, 3, 1100}) {
                AttnCase c = make_case(2, 8, 2, 1, k_len, head_dim, 900 + int(scheme) * 11 + head_dim + k_len);
                c.mask = ATTNGEN_MASK_CAUSAL;
                if (k_len > 3) c.kv_lengths = {k_len, 613};
                if (scheme != ATTNGEN_SCHEME_SDPA) set_random_scheme(c, scheme, 910 + int(scheme));
                round_inputs(c);
                check_bf16_run(c, decode_dot_kernel_expected(dot_expected, scheme));
            }
        }
    }
}

TEST_CASE("bf16: multi-head decode at lengths around key blocks and chunk ends", "[bf16][decode]") {
    // Decode computes a partial key chunk only up to the 128-key block holding its last visible key (P.V
    // stops there; q.k and the probabilities one masked block further): one key, a block and one, a chunk
    // and one (bf16 chunks hold 512 to 2048 keys, and 4096 in the dot-product kernels' multi-head copy),
    // and padding that ends inside a block.
    const bool dot_expected = bf16_dot_kernels_expected();
    for (const attngen_scheme scheme : kBuiltInSchemes) {
        for (const int head_dim : {64, 128}) {
            for (const int k_len : {1, 129, 1025, 2049, 4097}) {
                const int seed = 980 + int(scheme) * 17 + head_dim + k_len;
                AttnCase c = make_case(2, 4, 4, 1, k_len, head_dim, seed);
                c.mask = seed % 2 ? ATTNGEN_MASK_CAUSAL : ATTNGEN_MASK_NONE;
                if (k_len > 129) c.kv_lengths = {k_len, 131};
                if (scheme != ATTNGEN_SCHEME_SDPA) set_random_scheme(c, scheme, seed + 1);
                round_inputs(c);
                check_bf16_run(c, decode_dot_kernel_expected(dot_expected, scheme));
            }
        }
    }
}

TEST_CASE("bf16: padding rows holding NaN and infinities never reach the output", "[bf16][padding]") {
    // As for float32 (test_schemes.cpp), on the bf16 kernels: prefill, multi-head and grouped-query decode.
    for (const attngen_scheme scheme : kBuiltInSchemes) {
        for (const int q_len : {1, 37}) {
            for (const int kv_heads : {4, 2}) {
                const int seed = 1200 + int(scheme) * 19 + q_len + kv_heads;
                AttnCase c = make_case(3, 4, kv_heads, q_len, 300, q_len == 1 ? 128 : 64, seed);
                c.mask = seed % 2 ? ATTNGEN_MASK_CAUSAL : ATTNGEN_MASK_NONE;
                c.kv_lengths = {300, 151, 0};
                if (scheme != ATTNGEN_SCHEME_SDPA) set_random_scheme(c, scheme, seed + 1);
                round_inputs(c);
                CHECK_PADDING_IS_NEVER_USED(c, run_bf16, kBf16Tol, kBf16Tol);
            }
        }
    }
}

TEST_CASE("bf16: prefill on avx512_bf16 dot products where the CPU has them", "[bf16][prefill]") {
    // Every scheme, both fixed head dims, every mask; tiles and key chunks that end part-way (131 keys: a
    // chunk of 128 and 3, an odd count), fewer queries than keys (bottom-right causal: the diagonal falls
    // inside a pair of keys), padding that ends inside a pair, and a window that begins inside one. The
    // dot-product kernel serves every scheme where the CPU has avx512_bf16 (ctest runs this file again
    // with ATTNGEN_BF16_DOT=0: the widening kernels).
    const bool dot_expected = bf16_dot_kernels_expected();
    for (const attngen_scheme scheme : kBuiltInSchemes) {
        for (const int head_dim : {64, 128}) {
            for (const attngen_mask mask : {ATTNGEN_MASK_NONE, ATTNGEN_MASK_CAUSAL, ATTNGEN_MASK_SLIDING_WINDOW}) {
                const int seed = 950 + int(scheme) * 13 + head_dim + int(mask);
                AttnCase c = make_case(2, 4, 2, 70, 131, head_dim, seed);
                c.mask = mask;
                c.window = 37;
                c.kv_lengths = {131, 99};
                if (scheme != ATTNGEN_SCHEME_SDPA) set_random_scheme(c, scheme, seed + 1);
                round_inputs(c);
                check_bf16_run(c, dot_expected);
            }
        }
    }
}

TEST_CASE("bf16: mixed element types and GPU devices are clear errors", "[bf16][validation]") {
    AttnCase c = make_case(1, 2, 2, 5, 7, 16, 800);
    std::vector<uint16_t> q = to_bits(c.q), o(c.q_size(), 0);
    const attngen_attention_desc desc = make_desc(c);
    Status status = attention(bf16_tensor(q.data(), {1, 2, 5, 16}), k_tensor(c), v_tensor(c),
                              bf16_tensor(o.data(), {1, 2, 5, 16}), desc);
    CHECK(status.code == ATTNGEN_ERROR_INVALID_ARGUMENT);
    CHECK(status.message.find("k: dtype is float32, expected bfloat16") != std::string::npos);

    std::vector<uint16_t> k = to_bits(c.k), v = to_bits(c.v);
    attngen_attention_desc on_opencl = desc;
    on_opencl.device = ATTNGEN_DEVICE_OPENCL;
    status = attention(bf16_tensor(q.data(), {1, 2, 5, 16}), bf16_tensor(k.data(), {1, 2, 7, 16}),
                       bf16_tensor(v.data(), {1, 2, 7, 16}), bf16_tensor(o.data(), {1, 2, 5, 16}), on_opencl);
    CHECK(status.code == ATTNGEN_ERROR_UNSUPPORTED);
    CHECK(status.message.find("bfloat16") != std::string::npos);
}

TEST_CASE("bf16: conversions round to nearest even", "[bf16]") {
    CHECK(to_bf16(1.0f) == 0x3f80);
    CHECK(from_bf16(0x3f80) == 1.0f);
    CHECK(to_bf16(1.00390625f) == 0x3f80);  // halfway, even stays
    CHECK(to_bf16(1.01171875f) == 0x3f82);  // halfway, odd rounds up
    CHECK(std::isnan(from_bf16(to_bf16(std::nanf("")))));
}

TEST_CASE("bf16: Transformer-XL's R and DeBERTa's projections in bfloat16, or float32 rounded by the runtime",
          "[bf16][txl][deberta]") {
    // bf16 kernels take these tables in bf16, streamed like K and V. A float32 table (dense or strided) is
    // rounded to bf16 by the runtime: on bf16-representable values both calls must give the same bits.
    for (const attngen_scheme scheme : {ATTNGEN_SCHEME_TXL, ATTNGEN_SCHEME_DEBERTA}) {
        for (const int q_len : {1, 29}) {
            for (const int head_dim : {64, 128}) {
                const int seed = 1400 + int(scheme) * 7 + q_len + head_dim;
                AttnCase c = make_case(2, 4, 2, q_len, 300, head_dim, seed);
                c.mask = ATTNGEN_MASK_CAUSAL;
                c.kv_lengths = {300, 170};
                set_random_scheme(c, scheme, seed + 1);
                round_inputs(c);
                INFO(c.describe());
                const attngen_attention_desc given_float = make_desc(c);
                std::vector<float> from_float, from_bf16_tables, from_strided;
                REQUIRE(run_bf16_with(c, given_float, from_float).ok());
                CHECK_CLOSE(from_float, reference_output(c), kBf16Tol, kBf16Tol);

                attngen_attention_desc given_bf16 = given_float;
                std::vector<uint16_t> first = to_bits(scheme == ATTNGEN_SCHEME_TXL ? c.txl_r : c.deberta_pos_key);
                std::vector<uint16_t> second = to_bits(c.deberta_pos_query);
                attngen_tensor &first_table =
                    scheme == ATTNGEN_SCHEME_TXL ? given_bf16.txl_r : given_bf16.deberta_pos_key;
                first_table = bf16_tensor(first.data(), {first_table.shape[0], first_table.shape[1], head_dim});
                if (scheme == ATTNGEN_SCHEME_DEBERTA) {
                    given_bf16.deberta_pos_query = bf16_tensor(
                        second.data(),
                        {given_bf16.deberta_pos_query.shape[0], given_bf16.deberta_pos_query.shape[1], head_dim});
                }
                REQUIRE(run_bf16_with(c, given_bf16, from_bf16_tables).ok());
                CHECK(from_bf16_tables == from_float);

                // The first table as every other row of a buffer twice as long: not dense.
                attngen_attention_desc given_strided = given_float;
                attngen_tensor &strided_table =
                    scheme == ATTNGEN_SCHEME_TXL ? given_strided.txl_r : given_strided.deberta_pos_key;
                const std::vector<float> &dense = scheme == ATTNGEN_SCHEME_TXL ? c.txl_r : c.deberta_pos_key;
                std::vector<float> spread(2 * dense.size(), std::numeric_limits<float>::quiet_NaN());
                for (size_t row = 0; row < dense.size() / head_dim; row++)
                    std::copy_n(&dense[row * head_dim], head_dim, &spread[2 * row * head_dim]);
                const int64_t rows = strided_table.shape[1];
                strided_table.data = spread.data();
                strided_table.strides[0] = 2 * rows * head_dim;
                strided_table.strides[1] = 2 * head_dim;
                strided_table.strides[2] = 1;
                REQUIRE(run_bf16_with(c, given_strided, from_strided).ok());
                CHECK(from_strided == from_float);
            }
        }
    }
}

TEST_CASE("bf16: element-typed tables: wrong element types and values beyond bfloat16 are clear errors",
          "[bf16][validation][txl][deberta]") {
    AttnCase c = make_case(1, 2, 2, 1, 40, 64, 1450);
    set_deberta(c, 8);
    round_inputs(c);
    const attngen_attention_desc desc = make_desc(c);
    std::vector<float> out;

    SECTION("a bfloat16 table in a float32 call") {
        std::vector<uint16_t> bits = to_bits(c.deberta_pos_key);
        attngen_attention_desc mixed = desc;
        mixed.deberta_pos_key =
            bf16_tensor(bits.data(), {desc.deberta_pos_key.shape[0], desc.deberta_pos_key.shape[1], c.head_dim});
        std::vector<float> o(c.q_size(), 0.f);
        const Status status = attention(q_tensor(c), k_tensor(c), v_tensor(c),
                                        tensor(o.data(), {c.batch, c.heads, c.q_len, c.head_dim}), mixed);
        CHECK(status.code == ATTNGEN_ERROR_INVALID_ARGUMENT);
        CHECK(status.message.find("desc.deberta_pos_key: dtype is bfloat16, expected float32") != std::string::npos);
    }
    SECTION("an int32 table in a bfloat16 call") {
        attngen_attention_desc mixed = desc;
        mixed.deberta_pos_query.dtype = ATTNGEN_INT32;
        const Status status = run_bf16_with(c, mixed, out);
        CHECK(status.code == ATTNGEN_ERROR_INVALID_ARGUMENT);
        CHECK(status.message.find("desc.deberta_pos_query: dtype is int32, expected bfloat16") != std::string::npos);
    }
    SECTION("a float32 value that rounds to infinity, and a bfloat16 NaN, in a reachable row") {
        // Decode over 40 keys, span 8: relative positions 0 .. 39 reach rows 8 .. 15.
        const size_t at = 12 * c.head_dim + 5;
        AttnCase huge = c;
        // Finite in float32; past the midpoint between bfloat16's largest (3.3895e38) and 2^128.
        huge.deberta_pos_key[at] = std::numeric_limits<float>::max();
        Status status = run_bf16_with(huge, make_desc(huge), out);
        CHECK(status.code == ATTNGEN_ERROR_INVALID_ARGUMENT);
        CHECK(status.message.find("desc.deberta_pos_key rounded to bfloat16: element " + std::to_string(at) +
                                  " is not finite") != std::string::npos);

        std::vector<uint16_t> bits = to_bits(c.deberta_pos_query);
        bits[at] = 0x7fc0;  // NaN
        attngen_attention_desc with_nan = desc;
        with_nan.deberta_pos_query =
            bf16_tensor(bits.data(), {desc.deberta_pos_query.shape[0], desc.deberta_pos_query.shape[1], c.head_dim});
        status = run_bf16_with(c, with_nan, out);
        CHECK(status.code == ATTNGEN_ERROR_INVALID_ARGUMENT);
        CHECK(status.message.find("desc.deberta_pos_query: element " + std::to_string(at) + " is not finite") !=
              std::string::npos);
    }
}

TEST_CASE("bf16: Shaw's aK in bfloat16 or float32 rounded by the runtime; aV in float32", "[bf16][shaw]") {
    // Prefill (two 48-row tiles and a tail) and decode, D = 64 and 128, causal, a clip inside the keys.
    for (const int q_len : {1, 101}) {
        for (const int head_dim : {64, 128}) {
            const int seed = 1460 + q_len + head_dim;
            AttnCase c = make_case(2, 4, 2, q_len, 230, head_dim, seed);
            c.mask = ATTNGEN_MASK_CAUSAL;
            set_shaw(c, 24, true, seed + 1);
            round_inputs(c);
            INFO(c.describe());
            const attngen_attention_desc given_float = make_desc(c);
            std::vector<float> from_float, from_bf16_keys;
            REQUIRE(run_bf16_with(c, given_float, from_float).ok());
            CHECK_CLOSE(from_float, reference_output(c), kBf16Tol, kBf16Tol);

            std::vector<uint16_t> keys = to_bits(c.shaw_keys);
            attngen_attention_desc given_bf16 = given_float;
            given_bf16.shaw_keys = bf16_tensor(keys.data(), {given_float.shaw_keys.shape[0], head_dim});
            REQUIRE(run_bf16_with(c, given_bf16, from_bf16_keys).ok());
            const bool same_bits = from_bf16_keys == from_float;
            CHECK(same_bits);
        }
    }

    AttnCase c = make_case(1, 2, 2, 9, 40, 64, 1470);
    set_shaw(c, 4, true);
    round_inputs(c);
    std::vector<float> out;
    SECTION("aK past bfloat16's range rounds to infinity: a clear error") {
        AttnCase huge = c;
        huge.shaw_keys[3 * c.head_dim + 7] = std::numeric_limits<float>::max();
        const Status status = run_bf16_with(huge, make_desc(huge), out);
        CHECK(status.code == ATTNGEN_ERROR_INVALID_ARGUMENT);
        CHECK(status.message.find("desc.shaw_keys rounded to bfloat16: element " + std::to_string(3 * c.head_dim + 7) +
                                  " is not finite") != std::string::npos);
    }
    SECTION("aV in bfloat16 is a clear error (it stays float32)") {
        std::vector<uint16_t> bits = to_bits(c.shaw_values);
        attngen_attention_desc mixed = make_desc(c);
        mixed.shaw_values = bf16_tensor(bits.data(), {mixed.shaw_values.shape[0], c.head_dim});
        const Status status = run_bf16_with(c, mixed, out);
        CHECK(status.code == ATTNGEN_ERROR_INVALID_ARGUMENT);
        CHECK(status.message.find("desc.shaw_values") != std::string::npos);
    }
    SECTION("a bfloat16 aK in a float32 call is a clear error") {
        std::vector<uint16_t> bits = to_bits(c.shaw_keys);
        attngen_attention_desc mixed = make_desc(c);
        mixed.shaw_keys = bf16_tensor(bits.data(), {mixed.shaw_keys.shape[0], c.head_dim});
        std::vector<float> o(c.q_size(), 0.f);
        const Status status = attention(q_tensor(c), k_tensor(c), v_tensor(c),
                                        tensor(o.data(), {c.batch, c.heads, c.q_len, c.head_dim}), mixed);
        CHECK(status.code == ATTNGEN_ERROR_INVALID_ARGUMENT);
        CHECK(status.message.find("desc.shaw_keys: dtype is bfloat16, expected float32") != std::string::npos);
    }
}

TEST_CASE("bf16: rope and xpos over a bfloat16 cache of rotated keys", "[bf16][rope][xpos][cache]") {
    // The bf16 transforms (float32 math, rounded) fill the cache; keys_rotated then runs plain bf16
    // attention on queries transformed and rounded the same way.
    std::vector<AttnCase> cases;
    cases.push_back(make_case(2, 4, 4, 1, 300, 128, 1500));  // RoPE half decode, multi-head, padding
    set_rope(cases.back(), ATTNGEN_ROPE_HALF);
    cases.back().kv_lengths = {300, 171};
    cases.push_back(make_case(1, 4, 2, 33, 80, 64, 1501));  // RoPE interleaved prefill, partial rotary
    set_rope(cases.back(), ATTNGEN_ROPE_INTERLEAVED, 32);
    cases.push_back(make_case(1, 8, 2, 1, 200, 64, 1502));  // xPos decode, grouped heads
    set_xpos(cases.back(), 128.0);
    cases.back().xpos_centre_set = true;
    cases.back().xpos_centre = -100;
    for (AttnCase &c : cases) {
        c.mask = ATTNGEN_MASK_CAUSAL;
        round_inputs(c);
        INFO(c.describe());
        std::vector<float> fused;
        REQUIRE(run_bf16(c, fused).ok());

        const std::vector<uint16_t> keys = to_bits(c.k);
        std::vector<uint16_t> cache(keys.size());
        std::vector<float> float_cache(keys.size());
        const Tensor shape_of_k = k_tensor(c);
        const std::initializer_list<int64_t> k_shape = {c.batch, c.kv_heads, c.k_len, c.head_dim};
        const Tensor k_bf16 = bf16_tensor(keys.data(), k_shape), cache_bf16 = bf16_tensor(cache.data(), k_shape);
        const Tensor cache_f32 = tensor(float_cache.data(), k_shape);
        char error[512] = "";
        const bool rope = c.scheme == ATTNGEN_SCHEME_ROPE;
        auto transform = [&](const Tensor &x, const Tensor &out) {
            return rope ? attngen_rope(&x, nullptr, &c.rope, c.k_len, &out, error, sizeof error)
                        : attngen_xpos(&x, nullptr, c.xpos_scale_base, c.xpos_centre, 1, &out, error, sizeof error);
        };
        REQUIRE(transform(k_bf16, cache_bf16) == ATTNGEN_OK);
        REQUIRE(transform(shape_of_k, cache_f32) == ATTNGEN_OK);
        CHECK(cache == to_bits(float_cache));  // the float32 transform, rounded
        CHECK(cache != keys);

        AttnCase cached = c;
        cached.keys_rotated = true;
        for (size_t n = 0; n < cache.size(); n++)
            cached.k[n] = from_bf16(cache[n]);
        std::vector<float> out;
        RunInfo info{};
        const Status status = run_bf16_with(cached, make_desc(cached), out, &info);
        INFO(status.message);
        REQUIRE(status.ok());
        CHECK(std::string(info.kernel).find("sdpa") != std::string::npos);
        CHECK(std::string(info.kernel).find("_bf16") != std::string::npos);
        CHECK_CLOSE(out, fused, kBf16Tol, kBf16Tol);
        CHECK_CLOSE(out, reference_output(c), kBf16Tol, kBf16Tol);
    }
}

TEST_CASE("bf16: rope and xpos over a whole bfloat16 cache: dense, strided and in place", "[bf16][rope][xpos][cache]") {
    // Large enough that the runtime rotates bf16 in slices of heads (7 and 1 of 8 at this length), widening
    // and rounding the larger in parallel pieces of rows (from 1 MiB): every element must still equal the
    // float32 transform of the widened keys, rounded.
    const int64_t batch = 2, heads = 8, length = 2100, head_dim = 64, padded_dim = 80;
    const std::initializer_list<int64_t> shape = {batch, heads, length, head_dim};
    const int64_t count = batch * heads * length * head_dim;
    std::vector<float> keys(static_cast<size_t>(count));
    for (int64_t n = 0; n < count; n++)
        keys[size_t(n)] = from_bf16(to_bf16(float(std::sin(0.37 * double(n)) * 3.0)));
    const std::vector<uint16_t> key_bits = to_bits(keys);
    attngen_rope_params rope{};
    rope.base = 10000.0;
    rope.pairing = ATTNGEN_ROPE_INTERLEAVED;
    char error[512] = "";
    for (const bool is_rope : {true, false}) {
        INFO((is_rope ? "rope" : "xpos"));
        auto transform = [&](const Tensor &x, const Tensor &out) {
            return is_rope ? attngen_rope(&x, nullptr, &rope, int32_t(length), &out, error, sizeof error)
                           : attngen_xpos(&x, nullptr, 512.0, 0, 1, &out, error, sizeof error);
        };
        std::vector<float> float_out(static_cast<size_t>(count));
        REQUIRE(transform(tensor(keys.data(), shape), tensor(float_out.data(), shape)) == ATTNGEN_OK);
        const std::vector<uint16_t> expected = to_bits(float_out);

        std::vector<uint16_t> dense_out(static_cast<size_t>(count), 0xffff);
        REQUIRE(transform(bf16_tensor(key_bits.data(), shape), bf16_tensor(dense_out.data(), shape)) == ATTNGEN_OK);
        const bool dense_matches = dense_out == expected;  // (not the vectors: 2 M elements to print)
        CHECK(dense_matches);

        // x and out with rows padded to 80 channels (as a cache with room beside each key).
        std::vector<uint16_t> padded_x(static_cast<size_t>(count / head_dim * padded_dim), 0x7fc0);  // NaN padding
        std::vector<uint16_t> padded_out(padded_x.size(), 0x1234);
        for (int64_t row = 0; row < count / head_dim; row++) {
            std::copy_n(key_bits.begin() + row * head_dim, head_dim, padded_x.begin() + row * padded_dim);
        }
        Tensor strided_x = bf16_tensor(padded_x.data(), shape), strided_out = bf16_tensor(padded_out.data(), shape);
        const int64_t strides[4] = {heads * length * padded_dim, length * padded_dim, padded_dim, 1};
        for (int d = 0; d < 4; d++)
            strided_x.strides[d] = strided_out.strides[d] = strides[d];
        REQUIRE(transform(strided_x, strided_out) == ATTNGEN_OK);
        bool rows_match = true, padding_kept = true;
        for (int64_t row = 0; row < count / head_dim; row++) {
            rows_match &= std::equal(expected.begin() + row * head_dim, expected.begin() + (row + 1) * head_dim,
                                     padded_out.begin() + row * padded_dim);
            padding_kept &=
                std::all_of(padded_out.begin() + row * padded_dim + head_dim,
                            padded_out.begin() + (row + 1) * padded_dim, [](uint16_t bits) { return bits == 0x1234; });
        }
        CHECK(rows_match);
        CHECK(padding_kept);

        std::vector<uint16_t> in_place = key_bits;
        const Tensor cache = bf16_tensor(in_place.data(), shape);
        REQUIRE(transform(cache, cache) == ATTNGEN_OK);
        const bool in_place_matches = in_place == expected;
        CHECK(in_place_matches);
    }
}

TEST_CASE("bf16: rope and xpos with mixed element types are clear errors", "[bf16][rope][xpos][validation]") {
    AttnCase c = make_case(1, 2, 2, 1, 8, 16, 1510);
    const std::vector<uint16_t> keys = to_bits(c.k);
    std::vector<float> out(c.k.size());
    const Tensor x = bf16_tensor(keys.data(), {1, 2, 8, 16}), o = tensor(out.data(), {1, 2, 8, 16});
    attngen_rope_params rope{};
    rope.base = 10000;
    char error[512] = "";
    CHECK(attngen_rope(&x, nullptr, &rope, 8, &o, error, sizeof error) == ATTNGEN_ERROR_INVALID_ARGUMENT);
    CHECK(std::string(error).find("out: dtype is float32, expected bfloat16") != std::string::npos);
    CHECK(attngen_xpos(&x, nullptr, 512.0, -4, 1, &o, error, sizeof error) == ATTNGEN_ERROR_INVALID_ARGUMENT);
    CHECK(std::string(error).find("out: dtype is float32, expected bfloat16") != std::string::npos);
}
