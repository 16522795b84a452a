// Front-ends of the standalone positional kernels.
#include "internal.h"

#include <algorithm>
#include <deque>

namespace attngen::detail {

namespace {

const KernelEntry &op_kernel(const std::string &op) {
    const KernelEntry *kernel = find_op_kernel(op, "cpu");
    if (!kernel) fail(ATTNGEN_ERROR_UNSUPPORTED, "no '" + op + "' kernel in this build");
    return *kernel;
}

// Positions [B, L]: given (checked), or first .. first+L-1 for every batch.
const attngen_tensor *positions_or_default(const attngen_tensor *given, int64_t batch, int64_t length, int64_t first,
                                           std::deque<OwnedTensor> &owned, int64_t *max_position) {
    if (is_present(given)) {
        check_tensor(given, "positions", ATTNGEN_INT32, {"batch", "length"}, {batch, length});
        std::vector<int64_t> strides = strides_of(*given);
        const auto *ids = static_cast<const int32_t *>(given->data);
        for (int64_t b = 0; b < batch; b++) {
            for (int64_t n = 0; n < length; n++)
                *max_position = std::max<int64_t>(*max_position, ids[b * strides[0] + n * strides[1]]);
        }
        return given;
    }
    std::vector<int32_t> ids(batch * length);
    for (int64_t b = 0; b < batch; b++) {
        for (int64_t n = 0; n < length; n++)
            ids[b * length + n] = int32_t(first + n);
    }
    if (length > 0) *max_position = std::max<int64_t>(*max_position, first + length - 1);
    owned.push_back(owned_i32(std::move(ids), {batch, length}));
    return &owned.back().view;
}

void check_same_shape(const attngen_tensor *out, const attngen_tensor &x, const DimNames &dims,
                      attngen_dtype dtype = ATTNGEN_FLOAT32) {
    std::vector<int64_t> expected(x.shape, x.shape + x.rank);
    check_tensor(out, "out", dtype, dims, expected);
    if (overlaps(*out, x) && out->data != x.data) invalid("out partially overlaps x");
}

// The input of a rotation kernel when out is x (in place, e.g. a KV cache rotated where it lies): a
// copy, since the kernels write a row's first channels before its later channels read them as pairs.
const attngen_tensor *rotation_input(const attngen_tensor *x, const attngen_tensor *out,
                                     std::deque<OwnedTensor> &owned) {
    if (!overlaps(*out, *x)) return x;
    owned.push_back(dense_copy_f32(*x));
    return &owned.back().view;
}

// x and out of a rotation (RoPE, xPos): both float32, or both bfloat16.
void check_rotation_tensors(const attngen_tensor *x, const attngen_tensor *out) {
    const DimNames dims{"batch", "heads", "length", "head_dim"};
    const attngen_dtype dtype = x && x->dtype == ATTNGEN_BFLOAT16 ? ATTNGEN_BFLOAT16 : ATTNGEN_FLOAT32;
    check_tensor(x, "x", dtype, dims);
    check_same_shape(out, *x, dims, dtype);
}

// The view of t at batch b, rows [first, first + count) of dimension 1 (count 0: all of them).
attngen_tensor batch_slice(const attngen_tensor &t, int64_t b, int64_t first = 0, int64_t count = 0) {
    const std::vector<int64_t> strides = strides_of(t);
    attngen_tensor view = t;
    view.data = static_cast<uint8_t *>(t.data) + (b * strides[0] + first * strides[1]) * int64_t(element_size(t.dtype));
    view.shape[0] = 1;
    if (count > 0) view.shape[1] = count;
    for (int d = 0; d < t.rank; d++)
        view.strides[d] = strides[size_t(d)];
    return view;
}

// Elements of a bfloat16 rotation's float32 slices: 4 MiB, so the slice's widening and rounding still
// take both cores (from 1 MiB) and its two buffers stay in the last-level cache.
constexpr int64_t kRotationSliceElements = int64_t(1) << 20;

// Runs a rotation kernel (`args` without x, out and positions) on x into out. float32: one call. The
// kernels are float32, so bfloat16 goes in slices of heads: widened into one float32 buffer, rotated
// into another and rounded to nearest even into out. The two buffers serve every slice: with buffers
// of the whole tensor, their first touch (page faults, clearing) took 30 % of a (1,32,4096,128) call.
void run_rotation(const KernelEntry &kernel, KernelArguments args, const attngen_tensor &x, const attngen_tensor &out,
                  const attngen_tensor &positions, std::deque<OwnedTensor> &owned) {
    if (element_count(x) == 0) return;
    if (x.dtype == ATTNGEN_FLOAT32) {
        args.tensors["x"] = rotation_input(&x, &out, owned);
        args.tensors["out"] = &out;
        args.tensors["positions"] = &positions;
        call_kernel(kernel, args);
        return;
    }
    const int64_t head_elements = x.shape[2] * x.shape[3];
    const int64_t heads_per_slice = std::clamp<int64_t>(kRotationSliceElements / head_elements, 1, x.shape[1]);
    std::vector<float> widened(static_cast<size_t>(heads_per_slice * head_elements)), rotated(widened.size());
    for (int64_t b = 0; b < x.shape[0]; b++) {
        const attngen_tensor batch_positions = batch_slice(positions, b);
        for (int64_t first = 0; first < x.shape[1]; first += heads_per_slice) {
            const int64_t count = std::min(heads_per_slice, x.shape[1] - first);
            const attngen_tensor x_slice = batch_slice(x, b, first, count);
            auto dense_f32_view = [&](std::vector<float> &buffer) {
                attngen_tensor view = x_slice;
                view.dtype = ATTNGEN_FLOAT32;
                view.data = buffer.data();
                std::fill(view.strides, view.strides + view.rank, 0);  // dense
                return view;
            };
            const attngen_tensor widened_view = dense_f32_view(widened), rotated_view = dense_f32_view(rotated);
            widen_bf16_into(x_slice, widened.data());
            args.tensors["x"] = &widened_view;
            args.tensors["out"] = &rotated_view;
            args.tensors["positions"] = &batch_positions;
            call_kernel(kernel, args);
            store_rounded_bf16(rotated_view, batch_slice(out, b, first, count));
        }
    }
}

void check_convention(attngen_sinusoid_convention convention, int64_t channels) {
    if (convention < ATTNGEN_SINUSOID_PAPER || convention > ATTNGEN_SINUSOID_TXL) {
        invalid("sinusoid convention is " + std::to_string(int(convention)) +
                ", expected 0 (paper), 1 (t2t) or 2 (txl)");
    }
    if (channels < 1) invalid("sinusoid: channels is " + std::to_string(channels) + ", expected >= 1");
    if (convention == ATTNGEN_SINUSOID_PAPER && channels % 2 != 0) {
        invalid("sinusoid: the paper (pytorch examples) convention needs an even channel count, got " +
                std::to_string(channels) + " (the reference raises too)");
    }
}

}  // namespace

}  // namespace attngen::detail

using namespace attngen::detail;

extern "C" {

attngen_status attngen_rope(const attngen_tensor *x, const attngen_tensor *positions, const attngen_rope_params *rope,
                            int32_t seq_len_hint, const attngen_tensor *out, char *error, size_t error_size) {
    return guarded(error, error_size, [&] {
        std::deque<OwnedTensor> owned;
        check_rotation_tensors(x, out);
        if (!rope) invalid("rope: params pointer is null");
        const int64_t head_dim = x->shape[3];
        if (head_dim < 2) invalid("rope: head_dim is " + std::to_string(head_dim) + ", expected >= 2");
        check_rope_params(*rope, int(head_dim));
        int64_t max_position = 0;
        KernelArguments args;
        const attngen_tensor *ids = positions_or_default(positions, x->shape[0], x->shape[2], 0, owned, &max_position);
        RopeFrequencies frequencies =
            rope_frequencies(*rope, int(head_dim), int(std::max<int64_t>(max_position + 1, seq_len_hint)));
        const int64_t pairs = int64_t(frequencies.inv_freq.size());
        owned.push_back(owned_f32(std::move(frequencies.inv_freq), {pairs}));
        args.tensors["inv_freq"] = &owned.back().view;
        args.floats["attention_factor"] = float(frequencies.attention_factor);
        run_rotation(op_kernel(rope->pairing == ATTNGEN_ROPE_INTERLEAVED ? "rope_interleaved" : "rope_half"), args, *x,
                     *out, *ids, owned);
    });
}

attngen_status attngen_xpos(const attngen_tensor *x, const attngen_tensor *positions, double scale_base, int32_t centre,
                            int32_t downscale, const attngen_tensor *out, char *error, size_t error_size) {
    return guarded(error, error_size, [&] {
        std::deque<OwnedTensor> owned;
        check_rotation_tensors(x, out);
        if (x->shape[3] < 2 || x->shape[3] % 2 != 0) {
            invalid("xpos: head_dim is " + std::to_string(x->shape[3]) + ", expected an even number >= 2");
        }
        check_finite(scale_base, "xpos scale_base");
        if (scale_base <= 0) invalid("xpos: scale_base is " + std::to_string(scale_base) + ", expected > 0");
        if (downscale != 0 && downscale != 1)
            invalid("xpos: downscale is " + std::to_string(downscale) + ", expected 0 or 1");
        int64_t max_position = 0;
        KernelArguments args;
        const attngen_tensor *ids = positions_or_default(positions, x->shape[0], x->shape[2], 0, owned, &max_position);
        args.floats["scale_base"] = float(scale_base);
        args.ints["centre"] = centre;
        args.ints["downscale"] = downscale;
        run_rotation(op_kernel("xpos"), args, *x, *out, *ids, owned);
    });
}

int32_t attngen_sinusoid_columns(attngen_sinusoid_convention convention, int32_t channels) {
    if (channels < 1) return 0;
    return convention == ATTNGEN_SINUSOID_TXL ? 2 * ((channels + 1) / 2) : channels;
}

attngen_status attngen_sinusoid_table(attngen_sinusoid_convention convention, int32_t channels, int32_t position_offset,
                                      double base, const attngen_tensor *out, char *error, size_t error_size) {
    return guarded(error, error_size, [&] {
        check_convention(convention, channels);
        check_finite(base, "sinusoid base");
        if (base <= 0) invalid("sinusoid: base is " + std::to_string(base) + ", expected > 0");
        check_tensor(out, "out", ATTNGEN_FLOAT32, {"length", "columns"},
                     {-1, attngen_sinusoid_columns(convention, channels)});
        KernelArguments args;
        args.tensors["out"] = out;
        args.ints["convention"] = int32_t(convention);
        args.ints["channels"] = channels;
        args.ints["position_offset"] = position_offset;
        args.floats["base"] = float(base);
        if (element_count(*out) == 0) return;
        call_kernel(op_kernel("sinusoid_table"), args);
    });
}

attngen_status attngen_add_sinusoid(const attngen_tensor *x, const attngen_tensor *positions,
                                    attngen_sinusoid_convention convention, double base, const attngen_tensor *out,
                                    char *error, size_t error_size) {
    return guarded(error, error_size, [&] {
        check_tensor(x, "x", ATTNGEN_FLOAT32, {"batch", "length", "channels"});
        check_same_shape(out, *x, {"batch", "length", "channels"});
        check_convention(convention, x->shape[2]);
        if (attngen_sinusoid_columns(convention, int32_t(x->shape[2])) != x->shape[2]) {
            invalid("sinusoid: the Transformer-XL table of " + std::to_string(x->shape[2]) +
                    " channels has one more column than x; use an even channel count");
        }
        check_finite(base, "sinusoid base");
        if (base <= 0) invalid("sinusoid: base is " + std::to_string(base) + ", expected > 0");
        std::deque<OwnedTensor> owned;
        int64_t max_position = 0;
        KernelArguments args;
        args.tensors["x"] = x;
        args.tensors["out"] = out;
        args.tensors["positions"] = positions_or_default(positions, x->shape[0], x->shape[1], 0, owned, &max_position);
        args.ints["convention"] = int32_t(convention);
        args.floats["base"] = float(base);
        if (element_count(*x) == 0) return;
        call_kernel(op_kernel("add_sinusoid"), args);
    });
}

attngen_status attngen_add_learned(const attngen_tensor *x, const attngen_tensor *positions, int32_t position_offset,
                                   const attngen_tensor *table, const attngen_tensor *out, char *error,
                                   size_t error_size) {
    return guarded(error, error_size, [&] {
        check_tensor(x, "x", ATTNGEN_FLOAT32, {"batch", "length", "channels"});
        check_same_shape(out, *x, {"batch", "length", "channels"});
        check_tensor(table, "table", ATTNGEN_FLOAT32, {"max_positions", "channels"}, {-1, x->shape[2]});
        std::deque<OwnedTensor> owned;
        int64_t max_position = 0;
        const attngen_tensor *ids = positions_or_default(positions, x->shape[0], x->shape[1], 0, owned, &max_position);
        // Positions + offset must index the table: checked here, element by element.
        std::vector<int32_t> shifted(x->shape[0] * x->shape[1]);
        std::vector<int64_t> strides = strides_of(*ids);
        const auto *values = static_cast<const int32_t *>(ids->data);
        const int64_t rows = table->shape[0];
        for (int64_t b = 0; b < x->shape[0]; b++) {
            for (int64_t n = 0; n < x->shape[1]; n++) {
                const int64_t position = int64_t(values[b * strides[0] + n * strides[1]]) + position_offset;
                if (position < 0 || position >= rows) {
                    invalid("learned positions: position " + std::to_string(position) + " at [batch " +
                            std::to_string(b) + ", index " + std::to_string(n) + "] is outside the table's " +
                            std::to_string(rows) + " rows");
                }
                shifted[b * x->shape[1] + n] = int32_t(position);
            }
        }
        owned.push_back(owned_i32(std::move(shifted), {x->shape[0], x->shape[1]}));
        KernelArguments args;
        args.tensors["x"] = x;
        args.tensors["out"] = out;
        args.tensors["positions"] = &owned.back().view;
        args.tensors["table"] = table;
        if (element_count(*x) == 0) return;
        call_kernel(op_kernel("add_learned"), args);
    });
}

}  // extern "C"
