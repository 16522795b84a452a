// Runtime internals: errors as values, tensor checks, Halide buffer views, kernel calls.
#pragma once

#include "attngen/attngen.h"
#include "registry.h"

#include <HalideRuntime.h>

#include <cstdint>
#include <cstring>
#include <map>
#include <memory>
#include <string>
#include <vector>

namespace attngen::detail {

// A failed check. Thrown inside the runtime and turned into a status code at the API boundary.
struct Failure {
    attngen_status code;
    std::string message;
};

[[noreturn]] void fail(attngen_status code, const std::string &message);
[[noreturn]] inline void invalid(const std::string &message) {
    fail(ATTNGEN_ERROR_INVALID_ARGUMENT, message);
}

// Runs `body`, converting Failure and std::bad_alloc into a status and an error message.
template <typename Body>
attngen_status guarded(char *error, size_t error_size, Body &&body);
void write_error(char *error, size_t error_size, const std::string &message);

// Bytes per element of a dtype.
size_t element_size(attngen_dtype dtype);
const char *dtype_name(attngen_dtype dtype);

// Shape of a tensor as a vector, for messages.
std::string shape_string(const attngen_tensor &t);

// Dimension names used in messages, e.g. {"batch", "heads", "q_len", "head_dim"}.
using DimNames = std::vector<std::string>;

// Checks a tensor is present, has the dtype and rank, positive-or-zero extents, strides that
// do not overlap, and (for each expected extent >= 0) the expected extent.
void check_tensor(const attngen_tensor *t, const std::string &name, attngen_dtype dtype, const DimNames &dims,
                  const std::vector<int64_t> &expected = {});
bool is_present(const attngen_tensor *t);
// Strides of a tensor (contiguous row-major when all zero).
std::vector<int64_t> strides_of(const attngen_tensor &t);
int64_t element_count(const attngen_tensor &t);
// Writes zeros to every element of a float32 tensor.
void fill_zero(const attngen_tensor &t);
// Whether two tensors' memory ranges overlap.
bool overlaps(const attngen_tensor &a, const attngen_tensor &b);
// All values of a float32 or bfloat16 tensor are finite; with range_dim >= 0, those whose index along that dimension
// lies in [range_first, range_last]. Large tensors are scanned in parallel.
void check_finite(const attngen_tensor &t, const std::string &name, int range_dim = -1, int64_t range_first = 0,
                  int64_t range_last = 0);
void check_finite(double value, const std::string &name);

// A dense copy of data (row-major), owned here, viewed as an attngen_tensor.
struct OwnedTensor {
    std::vector<float> f32;
    std::vector<int32_t> i32;
    std::vector<uint16_t> bf16;
    attngen_tensor view{};
};
OwnedTensor owned_f32(std::vector<float> values, std::vector<int64_t> shape);
OwnedTensor owned_i32(std::vector<int32_t> values, std::vector<int64_t> shape);
// A dense row-major copy of a float32 tensor (any strides).
OwnedTensor dense_copy_f32(const attngen_tensor &t);
// float32 to bfloat16, rounded to nearest even (NaN stays a quiet NaN); inline, so copies vectorize.
inline uint16_t round_to_bf16(float value) {
    uint32_t bits;
    std::memcpy(&bits, &value, sizeof bits);
    if ((bits & 0x7fffffffu) > 0x7f800000u) return uint16_t((bits >> 16) | 0x40);
    bits += 0x7fffu + ((bits >> 16) & 1u);
    return uint16_t(bits >> 16);
}
// bfloat16 to float32 (exact).
inline float widen_bf16(uint16_t bits) {
    const uint32_t wide = uint32_t(bits) << 16;
    float value;
    std::memcpy(&value, &wide, sizeof value);
    return value;
}
// A dense row-major bfloat16 copy of a float32 tensor (any strides), rounded to nearest even.
OwnedTensor rounded_bf16_copy(const attngen_tensor &t);
OwnedTensor owned_bf16(std::vector<uint16_t> values, std::vector<int64_t> shape);
// Widens a bfloat16 tensor (any strides) into dense row-major float32 at `dense`.
void widen_bf16_into(const attngen_tensor &t, float *dense);
// Rounds a dense row-major float32 tensor into a bfloat16 tensor of its shape (any strides).
void store_rounded_bf16(const attngen_tensor &dense, const attngen_tensor &out);

// A Halide buffer over a tensor, dimensions reversed (Halide is innermost first). When the
// innermost stride is not 1 (which kernels require), the data is packed into a dense copy and,
// for outputs, copied back by `finish()`.
class HalideView {
public:
    HalideView(const attngen_tensor &t, bool is_output, const std::string &name);
    ~HalideView();
    HalideView(const HalideView &) = delete;
    HalideView &operator=(const HalideView &) = delete;

    halide_buffer_t *buffer() { return &buffer_; }
    // Copies device results back to the host, unpacks packed outputs, frees device memory.
    void finish();

private:
    attngen_tensor tensor_;
    bool is_output_;
    std::vector<halide_dimension_t> dims_;
    std::vector<uint8_t> packed_;
    halide_buffer_t buffer_{};
};

// Named kernel arguments, matched against a kernel's metadata.
struct KernelArguments {
    std::map<std::string, const attngen_tensor *> tensors;  // inputs (and "out")
    std::map<std::string, int32_t> ints;
    std::map<std::string, float> floats;
};

// Calls a kernel with arguments matched by name to its metadata; every argument it declares must be
// supplied, with the type and rank it declares.
void call_kernel(const KernelEntry &kernel, const KernelArguments &args);

// Kernel lookup: the kernel with a fast path for head_dim where one is built and its CPU targets hold
// the variant the CPU dispatches to, else the generic kernel (head_dim 0: the generic one).
const KernelEntry *find_attention_kernel(const std::string &scheme, const std::string &options,
                                         const std::string &shape, const std::string &device,
                                         const std::string &dtype = "f32", int64_t head_dim = 0);
const KernelEntry *find_op_kernel(const std::string &op, const std::string &device);
// Resolves a requested device (auto: GPU when present, else CPU) to a device name with kernels.
std::string resolve_device(attngen_device device, const std::string &scheme, const std::string &options,
                           const std::string &shape, const std::string &dtype = "f32");
// The Halide CPU target the multi-target dispatcher picks on this machine.
std::string dispatched_cpu_target();
// A kernel built for avx512_bf16 dot products: one CPU target (avx512_sapphirerapids, compiled without
// AVX512-FP16, see cmake/AttngenKernels.cmake), preferred by find_attention_kernel where the CPU has them.
bool is_bf16_dot_kernel(const KernelEntry &kernel);

// Positional functions (positional.cpp), used by the attention front-end.
std::vector<double> alibi_slopes(int heads);
// The float32 log spans of T5 and DeBERTa buckets (double log rounded to float, as the references).
float t5_log_span(bool bidirectional, int num_buckets, int max_distance);
float deberta_log_span(int bucket_size, int max_position);
struct RopeFrequencies {
    std::vector<float> inv_freq;
    double attention_factor = 1.0;
};
RopeFrequencies rope_frequencies(const attngen_rope_params &rope, int head_dim, int seq_len);
void check_rope_params(const attngen_rope_params &rope, int head_dim);

// Front-ends (attention.cpp).
void attention(const attngen_tensor *q, const attngen_tensor *k, const attngen_tensor *v, const attngen_tensor *out,
               const attngen_attention_desc &desc, attngen_run_info *info);

template <typename Body>
attngen_status guarded(char *error, size_t error_size, Body &&body) {
    try {
        body();
        write_error(error, error_size, "");
        return ATTNGEN_OK;
    } catch (const Failure &failure) {
        write_error(error, error_size, failure.message);
        return failure.code;
    } catch (const std::bad_alloc &) {
        write_error(error, error_size, "out of memory");
        return ATTNGEN_ERROR_OUT_OF_MEMORY;
    } catch (const std::exception &e) {
        write_error(error, error_size, std::string("internal error: ") + e.what());
        return ATTNGEN_ERROR_KERNEL_FAILED;
    }
}

// Kernel temporaries come from a cache of freed blocks (allocator.cpp); installed with the other
// Halide hooks before the first kernel call.
void install_block_cache();
size_t release_cached_blocks();

}  // namespace attngen::detail
