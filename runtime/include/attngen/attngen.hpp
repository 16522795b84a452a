// attngen C++ API: the C API (attngen.h) with tensor helpers and errors as values.
#pragma once

#include "attngen.h"

#include <cstddef>
#include <cstdint>
#include <initializer_list>
#include <map>
#include <new>
#include <string>
#include <vector>

namespace attngen {

using Tensor = attngen_tensor;
using AttentionDesc = attngen_attention_desc;
using RunInfo = attngen_run_info;

// A contiguous row-major view of `data` with `shape`.
Tensor tensor(float *data, std::initializer_list<int64_t> shape);
Tensor tensor(int32_t *data, std::initializer_list<int64_t> shape);
Tensor tensor(const float *data, std::initializer_list<int64_t> shape);
Tensor tensor(const int32_t *data, std::initializer_list<int64_t> shape);
Tensor tensor(float *data, const std::vector<int64_t> &shape);
// A contiguous bfloat16 view (raw bf16 bits in uint16_t).
Tensor bf16_tensor(uint16_t *data, std::initializer_list<int64_t> shape);
Tensor bf16_tensor(const uint16_t *data, std::initializer_list<int64_t> shape);
// float <-> bfloat16 bits, rounding to nearest even (NaN stays NaN).
uint16_t to_bf16(float value);
float from_bf16(uint16_t bits);
// A strided view; strides in elements.
Tensor strided(float *data, std::initializer_list<int64_t> shape, std::initializer_list<int64_t> strides);

// An allocator for standard containers over attngen_alloc (cache-line aligned, huge pages for large
// blocks): std::vector<float, attngen::Allocator<float>>. Throws std::bad_alloc on failure.
template <typename T>
struct Allocator {
    using value_type = T;
    Allocator() = default;
    template <typename U>
    Allocator(const Allocator<U> &) {}
    T *allocate(std::size_t n) {
        if (n > SIZE_MAX / sizeof(T)) throw std::bad_alloc();
        void *block = attngen_alloc(n * sizeof(T));
        if (!block) throw std::bad_alloc();
        return static_cast<T *>(block);
    }
    void deallocate(T *block, std::size_t) { attngen_free(block); }
    template <typename U>
    bool operator==(const Allocator<U> &) const {
        return true;
    }
    template <typename U>
    bool operator!=(const Allocator<U> &) const {
        return false;
    }
};

struct Status {
    attngen_status code = ATTNGEN_OK;
    std::string message;
    bool ok() const { return code == ATTNGEN_OK; }
    explicit operator bool() const { return ok(); }
};

// A descriptor with defaults (SDPA, no mask, default scale, automatic device) and the scheme set.
AttentionDesc attention_desc(attngen_scheme scheme = ATTNGEN_SCHEME_SDPA, attngen_mask mask = ATTNGEN_MASK_NONE);

Status attention(const Tensor &q, const Tensor &k, const Tensor &v, const Tensor &out, const AttentionDesc &desc,
                 RunInfo *info = nullptr);

// A user-defined scheme's kernel, with its inputs by name (see attngen_attention_custom).
struct NamedInputs {
    std::map<std::string, Tensor> tensors;
    std::map<std::string, double> scalars;
};
Status attention(const std::string &scheme, const std::string &options, const Tensor &q, const Tensor &k,
                 const Tensor &v, const Tensor &out, const AttentionDesc &controls, const NamedInputs &inputs,
                 RunInfo *info = nullptr);

// Positional functions; on bad parameters they return an empty vector / -1 and set *status.
std::vector<double> alibi_slopes(int heads, Status *status = nullptr);
int t5_bucket(int relative_position, bool bidirectional, int num_buckets, int max_distance, Status *status = nullptr);
int deberta_bucket(int relative_position, int bucket_size, int max_position, Status *status = nullptr);
std::vector<float> rope_inv_freq(const attngen_rope_params &rope, int head_dim, int seq_len,
                                 double *attention_factor = nullptr, Status *status = nullptr);
attngen_rope_params rope_params(attngen_rope_pairing pairing = ATTNGEN_ROPE_HALF, double base = 10000.0);

}  // namespace attngen
