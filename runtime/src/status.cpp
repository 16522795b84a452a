// The C++ API over the C API.
#include "attngen/attngen.hpp"
#include "internal.h"

#include <cstring>
#include <vector>

namespace attngen {

namespace {
template <typename T>
Tensor make_tensor(T *data, const std::vector<int64_t> &shape, attngen_dtype dtype) {
    Tensor t{};
    t.data = const_cast<void *>(static_cast<const void *>(data));
    t.dtype = dtype;
    t.rank = int32_t(shape.size());
    for (size_t d = 0; d < shape.size() && d < ATTNGEN_MAX_RANK; d++)
        t.shape[d] = shape[d];
    return t;
}

// Runs a C call with an error buffer and turns the result into a Status.
template <typename Call>
Status call(Call &&c) {
    char message[1024] = {0};
    Status status;
    status.code = c(message, sizeof message);
    status.message = message;
    return status;
}

void set(Status *out, const Status &status) {
    if (out) *out = status;
}
}  // namespace

Tensor tensor(float *data, std::initializer_list<int64_t> shape) {
    return make_tensor(data, shape, ATTNGEN_FLOAT32);
}
Tensor tensor(int32_t *data, std::initializer_list<int64_t> shape) {
    return make_tensor(data, shape, ATTNGEN_INT32);
}
Tensor tensor(const float *data, std::initializer_list<int64_t> shape) {
    return make_tensor(data, shape, ATTNGEN_FLOAT32);
}
Tensor tensor(const int32_t *data, std::initializer_list<int64_t> shape) {
    return make_tensor(data, shape, ATTNGEN_INT32);
}
Tensor tensor(float *data, const std::vector<int64_t> &shape) {
    return make_tensor(data, shape, ATTNGEN_FLOAT32);
}

Tensor bf16_tensor(uint16_t *data, std::initializer_list<int64_t> shape) {
    return make_tensor(data, shape, ATTNGEN_BFLOAT16);
}
Tensor bf16_tensor(const uint16_t *data, std::initializer_list<int64_t> shape) {
    return make_tensor(data, shape, ATTNGEN_BFLOAT16);
}

uint16_t to_bf16(float value) {
    return detail::round_to_bf16(value);
}

float from_bf16(uint16_t bits) {
    return detail::widen_bf16(bits);
}

Tensor strided(float *data, std::initializer_list<int64_t> shape, std::initializer_list<int64_t> strides) {
    Tensor t = make_tensor(data, shape, ATTNGEN_FLOAT32);
    int d = 0;
    for (int64_t s : strides) {
        if (d < ATTNGEN_MAX_RANK) t.strides[d++] = s;
    }
    return t;
}

AttentionDesc attention_desc(attngen_scheme scheme, attngen_mask mask) {
    AttentionDesc desc;
    attngen_attention_desc_init(&desc);
    desc.scheme = scheme;
    desc.mask = mask;
    return desc;
}

Status attention(const Tensor &q, const Tensor &k, const Tensor &v, const Tensor &out, const AttentionDesc &desc,
                 RunInfo *info) {
    return call([&](char *m, size_t n) { return attngen_attention(&q, &k, &v, &out, &desc, info, m, n); });
}

Status attention(const std::string &scheme, const std::string &options, const Tensor &q, const Tensor &k,
                 const Tensor &v, const Tensor &out, const AttentionDesc &controls, const NamedInputs &inputs,
                 RunInfo *info) {
    std::vector<attngen_named_tensor> tensors;
    for (const auto &[name, t] : inputs.tensors)
        tensors.push_back({name.c_str(), t});
    std::vector<attngen_named_scalar> scalars;
    for (const auto &[name, value] : inputs.scalars)
        scalars.push_back({name.c_str(), value});
    return call([&](char *m, size_t n) {
        return attngen_attention_custom(scheme.c_str(), options.c_str(), &q, &k, &v, &out, &controls, tensors.data(),
                                        int32_t(tensors.size()), scalars.data(), int32_t(scalars.size()), info, m, n);
    });
}

std::vector<double> alibi_slopes(int heads, Status *status) {
    std::vector<double> slopes(heads > 0 ? heads : 0);
    Status s = call([&](char *m, size_t n) { return attngen_alibi_slopes(heads, slopes.data(), m, n); });
    set(status, s);
    return s.ok() ? slopes : std::vector<double>{};
}

int t5_bucket(int relative_position, bool bidirectional, int num_buckets, int max_distance, Status *status) {
    int32_t bucket = -1;
    Status s = call([&](char *m, size_t n) {
        return attngen_t5_bucket(relative_position, bidirectional, num_buckets, max_distance, &bucket, m, n);
    });
    set(status, s);
    return s.ok() ? bucket : -1;
}

int deberta_bucket(int relative_position, int bucket_size, int max_position, Status *status) {
    int32_t bucket = -1;
    Status s = call([&](char *m, size_t n) {
        return attngen_deberta_bucket(relative_position, bucket_size, max_position, &bucket, m, n);
    });
    set(status, s);
    return s.ok() ? bucket : -1;
}

std::vector<float> rope_inv_freq(const attngen_rope_params &rope, int head_dim, int seq_len, double *attention_factor,
                                 Status *status) {
    const int rot_dim = rope.rot_dim == 0 ? head_dim : rope.rot_dim;
    std::vector<float> inv_freq(rot_dim > 0 ? rot_dim / 2 : 0);
    Status s = call([&](char *m, size_t n) {
        return attngen_rope_inv_freq(&rope, head_dim, seq_len, inv_freq.data(), attention_factor, m, n);
    });
    set(status, s);
    return s.ok() ? inv_freq : std::vector<float>{};
}

attngen_rope_params rope_params(attngen_rope_pairing pairing, double base) {
    attngen_attention_desc desc;
    attngen_attention_desc_init(&desc);
    desc.rope.pairing = pairing;
    desc.rope.base = base;
    return desc.rope;
}

}  // namespace attngen
