// The attention front-end: validates every input, maps a descriptor onto the named inputs of the
// scheme's kernel, and dispatches to the generated kernel for the shape class and device.
#include "internal.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <deque>

namespace attngen::detail {

namespace {

struct Dims {
    int64_t batch, heads, kv_heads, q_len, k_len, head_dim;
    attngen_dtype dtype = ATTNGEN_FLOAT32;  // of q, k, v and out
};

constexpr int kMaxHeadDim = 256;

const char *scheme_name(attngen_scheme scheme) {
    if (const char *name = attngen_scheme_name(scheme)) return name;
    invalid("desc.scheme is " + std::to_string(int(scheme)) + ", not a known scheme (0..7)");
}

std::string dim_value(const char *name, int64_t value) {
    return std::string(name) + " (" + std::to_string(value) + ")";
}

// q, k, v, out: shapes, head counts, head_dim range, aliasing.
Dims check_core_tensors(const attngen_tensor *q, const attngen_tensor *k, const attngen_tensor *v,
                        const attngen_tensor *out) {
    // q decides the element type (float32 or bfloat16); k, v and out must share it.
    const attngen_dtype dtype = q && q->dtype == ATTNGEN_BFLOAT16 ? ATTNGEN_BFLOAT16 : ATTNGEN_FLOAT32;
    check_tensor(q, "q", dtype, {"batch", "heads", "q_len", "head_dim"});
    Dims dims{q->shape[0], q->shape[1], 0, q->shape[2], 0, q->shape[3]};
    check_tensor(k, "k", dtype, {"batch", "kv_heads", "k_len", "head_dim"}, {dims.batch, -1, -1, dims.head_dim});
    dims.dtype = dtype;
    dims.kv_heads = k->shape[1];
    dims.k_len = k->shape[2];
    check_tensor(v, "v", dtype, {"batch", "kv_heads", "k_len", "head_dim"},
                 {dims.batch, dims.kv_heads, dims.k_len, dims.head_dim});
    check_tensor(out, "out", dtype, {"batch", "heads", "q_len", "head_dim"},
                 {dims.batch, dims.heads, dims.q_len, dims.head_dim});
    if (dims.head_dim < 1 || dims.head_dim > kMaxHeadDim) {
        invalid("head_dim (q dimension 3) is " + std::to_string(dims.head_dim) + ", supported 1.." +
                std::to_string(kMaxHeadDim));
    }
    if (dims.heads > 0 && dims.kv_heads < 1) invalid("kv_heads (k dimension 1) is 0, expected >= 1");
    if (dims.kv_heads > 0 && dims.heads % dims.kv_heads != 0) {
        invalid(dim_value("heads", dims.heads) + " is not divisible by " + dim_value("kv_heads", dims.kv_heads) +
                ": GQA needs each kv head shared by the same number of query heads");
    }
    for (auto [tensor, name] : {std::pair{q, "q"}, std::pair{k, "k"}, std::pair{v, "v"}}) {
        if (overlaps(*out, *tensor))
            invalid(std::string("out overlaps ") + name + ": the output must not alias an input");
    }
    return dims;
}

struct Controls {
    int32_t mask_kind = 0, window = 0;
    float scale = 0;
};

Controls check_controls(const attngen_attention_desc &desc) {
    if (desc.mask < ATTNGEN_MASK_NONE || desc.mask > ATTNGEN_MASK_SLIDING_WINDOW) {
        invalid("desc.mask is " + std::to_string(int(desc.mask)) +
                ", expected 0 (none), 1 (causal) or 2 (sliding window)");
    }
    if (desc.mask == ATTNGEN_MASK_SLIDING_WINDOW && desc.window < 1) {
        invalid("desc.window is " + std::to_string(desc.window) + ", expected >= 1 for a sliding-window mask");
    }
    check_finite(desc.scale, "desc.scale");
    if (desc.scale < 0)
        invalid("desc.scale is " + std::to_string(desc.scale) + ", expected > 0 (or 0 for the scheme default)");
    return {int32_t(desc.mask), desc.window, desc.scale};
}

int32_t check_flag(int32_t value, const std::string &name) {
    if (value != 0 && value != 1) invalid(name + " is " + std::to_string(value) + ", expected 0 or 1");
    return value;
}

// Owns tensors the runtime synthesizes (defaults), with stable addresses.
struct Synthesized {
    std::deque<OwnedTensor> tensors;
    const attngen_tensor *add(OwnedTensor t) {
        tensors.push_back(std::move(t));
        return &tensors.back().view;
    }
};

const attngen_tensor *kv_lengths_argument(const attngen_attention_desc &desc, const Dims &dims, Synthesized &owned) {
    if (is_present(&desc.kv_lengths)) {
        check_tensor(&desc.kv_lengths, "desc.kv_lengths", ATTNGEN_INT32, {"batch"}, {dims.batch});
        const int64_t stride = strides_of(desc.kv_lengths)[0];
        const auto *lengths = static_cast<const int32_t *>(desc.kv_lengths.data);
        for (int64_t b = 0; b < dims.batch; b++) {
            const int32_t length = lengths[b * stride];
            if (length < 0 || length > dims.k_len) {
                invalid("desc.kv_lengths[" + std::to_string(b) + "] is " + std::to_string(length) + ", expected 0.." +
                        std::to_string(dims.k_len) + " (k_len)");
            }
        }
        return &desc.kv_lengths;
    }
    return owned.add(owned_i32(std::vector<int32_t>(dims.batch, int32_t(dims.k_len)), {dims.batch}));
}

// Position ids [batch, len]: given, or the defaults (queries bottom-right aligned).
const attngen_tensor *positions_argument(const attngen_tensor &given, const std::string &name, int64_t batch,
                                         int64_t length, int64_t first, Synthesized &owned, int64_t *max_position) {
    if (is_present(&given)) {
        check_tensor(&given, name, ATTNGEN_INT32, {"batch", "length"}, {batch, length});
        std::vector<int64_t> strides = strides_of(given);
        const auto *ids = static_cast<const int32_t *>(given.data);
        for (int64_t b = 0; b < batch; b++) {
            for (int64_t n = 0; n < length; n++)
                *max_position = std::max<int64_t>(*max_position, ids[b * strides[0] + n * strides[1]]);
        }
        return &given;
    }
    std::vector<int32_t> ids(batch * length);
    for (int64_t b = 0; b < batch; b++) {
        for (int64_t n = 0; n < length; n++)
            ids[b * length + n] = int32_t(first + n);
    }
    if (length > 0) *max_position = std::max<int64_t>(*max_position, first + length - 1);
    return owned.add(owned_i32(std::move(ids), {batch, length}));
}

void check_table(const attngen_tensor &t, const std::string &name, const DimNames &dims,
                 const std::vector<int64_t> &expected) {
    check_tensor(&t, name, ATTNGEN_FLOAT32, dims, expected);
    check_finite(t, name);
}

// A table the kernel takes in its element type (InputSpec::element_typed: Transformer-XL's R, DeBERTa's
// projections, streamed like K and V; Shaw's aK): float32 calls take float32; bfloat16 calls take bfloat16 as is,
// or float32 rounded here to bfloat16, a pass over the table that passing bfloat16 avoids.
const attngen_tensor *element_typed_table(const attngen_tensor &t, const std::string &name, const Dims &dims,
                                          const DimNames &names, const std::vector<int64_t> &expected,
                                          Synthesized &owned) {
    const bool rounds = dims.dtype == ATTNGEN_BFLOAT16 && t.dtype == ATTNGEN_FLOAT32;
    if (dims.dtype == ATTNGEN_FLOAT32 && t.dtype == ATTNGEN_BFLOAT16) {
        invalid(name + ": dtype is bfloat16, expected float32 (a bfloat16 table needs bfloat16 q, k, v and out)");
    }
    check_tensor(&t, name, rounds ? ATTNGEN_FLOAT32 : dims.dtype, names, expected);
    return rounds ? owned.add(rounded_bf16_copy(t)) : &t;
}

// check_finite for an element-typed table as given and, where the runtime rounded it, as the kernel gets it:
// a float32 value beyond bfloat16's range rounds to infinity.
void check_element_typed_finite(const attngen_tensor &given, const attngen_tensor *passed, const std::string &name,
                                int range_dim = -1, int64_t range_first = 0, int64_t range_last = 0) {
    check_finite(given, name, range_dim, range_first, range_last);
    if (passed != &given) check_finite(*passed, name + " rounded to bfloat16", range_dim, range_first, range_last);
}

// Maps the descriptor's scheme parameters onto the kernel's named inputs, validating each.
void add_scheme_arguments(const attngen_attention_desc &desc, const Dims &dims, KernelArguments &args,
                          Synthesized &owned) {
    switch (desc.scheme) {
        case ATTNGEN_SCHEME_SDPA:
            break;
        case ATTNGEN_SCHEME_ALIBI: {
            if (is_present(&desc.alibi_slopes)) {
                check_table(desc.alibi_slopes, "desc.alibi_slopes", {"heads"}, {dims.heads});
                args.tensors["slopes"] = &desc.alibi_slopes;
            } else {
                std::vector<double> slopes = alibi_slopes(int(dims.heads));
                args.tensors["slopes"] =
                    owned.add(owned_f32(std::vector<float>(slopes.begin(), slopes.end()), {dims.heads}));
            }
            args.ints["alibi_symmetric"] = check_flag(desc.alibi_symmetric, "desc.alibi_symmetric");
            break;
        }
        case ATTNGEN_SCHEME_T5: {
            check_tensor(&desc.t5_table, "desc.t5_table", ATTNGEN_FLOAT32, {"num_buckets", "heads"}, {-1, dims.heads});
            const int64_t buckets = desc.t5_table.shape[0];
            int32_t probe = 0;
            char message[256];
            if (attngen_t5_bucket(0, desc.t5_bidirectional, int32_t(buckets), desc.t5_max_distance, &probe, message,
                                  sizeof message) != ATTNGEN_OK) {
                invalid(message);
            }
            check_finite(desc.t5_table, "desc.t5_table");
            args.tensors["t5_table"] = &desc.t5_table;
            args.ints["t5_bidirectional"] = check_flag(desc.t5_bidirectional, "desc.t5_bidirectional");
            args.ints["t5_max_distance"] = desc.t5_max_distance;
            args.floats["t5_log_span"] = t5_log_span(desc.t5_bidirectional != 0, int(buckets), desc.t5_max_distance);
            break;
        }
        case ATTNGEN_SCHEME_SHAW: {
            const attngen_tensor *keys = element_typed_table(desc.shaw_keys, "desc.shaw_keys", dims,
                                                             {"2K+1", "head_dim"}, {-1, dims.head_dim}, owned);
            const int64_t rows = desc.shaw_keys.shape[0];
            if (rows < 3 || rows % 2 == 0) {
                invalid("desc.shaw_keys has " + std::to_string(rows) +
                        " rows; expected 2K+1 with clip distance K >= 1");
            }
            check_element_typed_finite(desc.shaw_keys, keys, "desc.shaw_keys");
            args.tensors["shaw_keys"] = keys;
            if (is_present(&desc.shaw_values)) {
                check_table(desc.shaw_values, "desc.shaw_values", {"2K+1", "head_dim"}, {rows, dims.head_dim});
                args.tensors["shaw_values"] = &desc.shaw_values;
            } else {
                args.tensors["shaw_values"] =
                    owned.add(owned_f32(std::vector<float>(rows * dims.head_dim, 0.f), {rows, dims.head_dim}));
            }
            break;
        }
        case ATTNGEN_SCHEME_TXL:
            // R grows with the sequence like k and v (it is a projection of activations): its values are
            // not scanned for non-finite entries on every call, as k and v are not.
            args.tensors["txl_r"] = element_typed_table(desc.txl_r, "desc.txl_r", dims, {"heads", "k_len", "head_dim"},
                                                        {dims.heads, dims.k_len, dims.head_dim}, owned);
            check_table(desc.txl_u, "desc.txl_u", {"heads", "head_dim"}, {dims.heads, dims.head_dim});
            check_table(desc.txl_v, "desc.txl_v", {"heads", "head_dim"}, {dims.heads, dims.head_dim});
            args.tensors["txl_u"] = &desc.txl_u;
            args.tensors["txl_v"] = &desc.txl_v;
            break;
        case ATTNGEN_SCHEME_DEBERTA: {
            const attngen_tensor *pos_key =
                element_typed_table(desc.deberta_pos_key, "desc.deberta_pos_key", dims, {"heads", "2*span", "head_dim"},
                                    {dims.heads, -1, dims.head_dim}, owned);
            const int64_t rows = desc.deberta_pos_key.shape[1];
            if (rows < 2 || rows % 2 != 0) {
                invalid("desc.deberta_pos_key has " + std::to_string(rows) + " rows; expected 2*span with span >= 1");
            }
            const attngen_tensor *pos_query =
                element_typed_table(desc.deberta_pos_query, "desc.deberta_pos_query", dims,
                                    {"heads", "2*span", "head_dim"}, {dims.heads, rows, dims.head_dim}, owned);
            if (desc.deberta_bucket_size < 0) invalid("desc.deberta_bucket_size is negative");
            if (desc.deberta_bucket_size > 0) {
                int32_t probe = 0;
                char message[256];
                if (attngen_deberta_bucket(0, desc.deberta_bucket_size, desc.deberta_max_position, &probe, message,
                                           sizeof message) != ATTNGEN_OK) {
                    invalid(message);
                }
            }
            // The rows a call can read are scanned for non-finite values (a table is 8 MB at 32 heads, span
            // 256, D = 128; a causal decode row reads half of it): relative positions p_i - j lie in
            // [1 - q_len, k_len - 1] and rows are monotone in them. The bounds are the kernel's own
            // (RelativeTableTerm::row_lower / row_upper): beyond bucket_size / 2 its float32 log bucket may
            // round up as far as bucket_size.
            const int64_t span = rows / 2;
            auto row_bound = [&](int64_t relative, bool upper) {
                int64_t bucket = relative;
                if (desc.deberta_bucket_size > 0) {
                    const int64_t mid = desc.deberta_bucket_size / 2, reach = desc.deberta_max_position - 1;
                    const int64_t clamped = std::clamp(relative, -reach, reach);
                    bucket = upper ? (clamped > mid ? 2 * mid : std::max(clamped, -mid))
                                   : (clamped < -mid ? -2 * mid : std::min(clamped, mid));
                }
                return std::clamp(bucket + span, int64_t(0), 2 * span - 1);
            };
            const int64_t first_row = row_bound(1 - dims.q_len, false), last_row = row_bound(dims.k_len - 1, true);
            check_element_typed_finite(desc.deberta_pos_key, pos_key, "desc.deberta_pos_key", 1, first_row, last_row);
            check_element_typed_finite(desc.deberta_pos_query, pos_query, "desc.deberta_pos_query", 1, first_row,
                                       last_row);
            args.tensors["deberta_pos_key"] = pos_key;
            args.tensors["deberta_pos_query"] = pos_query;
            args.ints["deberta_bucket_size"] = desc.deberta_bucket_size;
            args.ints["deberta_max_position"] = desc.deberta_max_position;
            args.floats["deberta_log_span"] =
                desc.deberta_bucket_size > 0 ? deberta_log_span(desc.deberta_bucket_size, desc.deberta_max_position)
                                             : 1.f;
            break;
        }
        case ATTNGEN_SCHEME_ROPE:
        case ATTNGEN_SCHEME_XPOS: {
            int64_t max_position = 0;
            args.tensors["q_positions"] = positions_argument(desc.q_positions, "desc.q_positions", dims.batch,
                                                             dims.q_len, dims.k_len - dims.q_len, owned, &max_position);
            args.tensors["k_positions"] = positions_argument(desc.k_positions, "desc.k_positions", dims.batch,
                                                             dims.k_len, 0, owned, &max_position);
            if (desc.scheme == ATTNGEN_SCHEME_ROPE) {
                check_rope_params(desc.rope, int(dims.head_dim));
                RopeFrequencies frequencies = rope_frequencies(desc.rope, int(dims.head_dim), int(max_position + 1));
                const int64_t pairs = int64_t(frequencies.inv_freq.size());
                args.tensors["rope_inv_freq"] = owned.add(owned_f32(std::move(frequencies.inv_freq), {pairs}));
                args.floats["rope_attention_factor"] = float(frequencies.attention_factor);
            } else {
                if (dims.head_dim % 2 != 0)
                    invalid("xpos: head_dim is " + std::to_string(dims.head_dim) + ", expected even");
                check_finite(desc.xpos_scale_base, "desc.xpos_scale_base");
                if (desc.xpos_scale_base <= 0)
                    invalid("desc.xpos_scale_base is " + std::to_string(desc.xpos_scale_base) + ", expected > 0");
                args.floats["xpos_scale_base"] = float(desc.xpos_scale_base);
                // The reference centres on min_pos = -N // 2 (floor) for a call of N = k_len rows.
                args.ints["xpos_centre"] = desc.xpos_centre_set ? desc.xpos_centre : int32_t(-((dims.k_len + 1) / 2));
            }
            break;
        }
    }
}

std::string scheme_options(const attngen_attention_desc &desc) {
    if (desc.scheme == ATTNGEN_SCHEME_ROPE) {
        return desc.rope.pairing == ATTNGEN_ROPE_INTERLEAVED ? "pairing:interleaved" : "pairing:half";
    }
    return "";
}

void fill_info(attngen_run_info *info, const KernelEntry &kernel) {
    if (!info) return;
    *info = attngen_run_info{};
    std::snprintf(info->kernel, sizeof info->kernel, "%s", kernel.name);
    std::snprintf(info->device, sizeof info->device, "%s", kernel.device);
    std::snprintf(info->cpu_target, sizeof info->cpu_target, "%s",
                  std::string(kernel.device) != "cpu" ? ""
                  : is_bf16_dot_kernel(kernel)        ? kernel.cpu_targets
                                                      : dispatched_cpu_target().c_str());
}

// Shared tail of the built-in and custom entry points: trivial shapes, kernel choice, call.
void run(const std::string &scheme, const std::string &options, const attngen_attention_desc &desc, const Dims &dims,
         const attngen_tensor *out, KernelArguments &args, attngen_run_info *info) {
    if (dims.batch == 0 || dims.heads == 0 || dims.q_len == 0) return;
    const std::string shape = dims.q_len == 1 ? "decode" : "prefill";
    const std::string dtype = out->dtype == ATTNGEN_BFLOAT16 ? "bf16" : "f32";
    const std::string device = resolve_device(desc.device, scheme, options, shape, dtype);
    const KernelEntry *kernel = find_attention_kernel(scheme, options, shape, device, dtype, dims.head_dim);
    if (!kernel) {
        fail(ATTNGEN_ERROR_UNSUPPORTED, "no kernel for scheme '" + scheme + "'" +
                                            (options.empty() ? "" : " (" + options + ")") + ", shape class " + shape +
                                            ", " + dtype + ", device " + device + " in this build");
    }
    if (dims.k_len == 0) {
        // No keys: every row is fully masked, so the output is zero.
        fill_zero(*out);
        fill_info(info, *kernel);
        return;
    }
    call_kernel(*kernel, args);
    fill_info(info, *kernel);
}

// RoPE or xPos over keys the caller already transformed (a KV cache): the queries are transformed
// here, with the positions, frequencies and centre the fused kernel would use, and the call becomes
// plain attention. The caller's cache must have been built with the same parameters.
void attention_over_rotated_keys(const attngen_tensor *q, const attngen_tensor *k, const attngen_tensor *v,
                                 const attngen_tensor *out, const attngen_attention_desc &desc, const Dims &dims,
                                 attngen_run_info *info) {
    if (desc.scheme != ATTNGEN_SCHEME_ROPE && desc.scheme != ATTNGEN_SCHEME_XPOS) {
        invalid(std::string("desc.keys_rotated is 1 but desc.scheme is ") + scheme_name(desc.scheme) +
                ": only rope and xpos transform keys");
    }
    if (desc.scheme == ATTNGEN_SCHEME_XPOS && !desc.xpos_centre_set) {
        invalid(
            "desc.keys_rotated with xpos needs desc.xpos_centre_set: the default centre, floor(-k_len / 2), "
            "moves with k_len, so queries and cached keys must be scaled around one given centre");
    }
    Synthesized owned;
    int64_t max_position = 0;
    const attngen_tensor *q_positions = positions_argument(desc.q_positions, "desc.q_positions", dims.batch, dims.q_len,
                                                           dims.k_len - dims.q_len, owned, &max_position);
    // Validated as the fused path would, and part of the dynamic-NTK length.
    positions_argument(desc.k_positions, "desc.k_positions", dims.batch, dims.k_len, 0, owned, &max_position);
    // The transformed queries in q's element type (bfloat16: rounded, as the cached keys are).
    const std::vector<int64_t> shape{dims.batch, dims.heads, dims.q_len, dims.head_dim};
    const size_t count = size_t(element_count(*q));
    const attngen_tensor *rotated =
        owned.add(dims.dtype == ATTNGEN_BFLOAT16 ? owned_bf16(std::vector<uint16_t>(count), shape)
                                                 : owned_f32(std::vector<float>(count), shape));
    char message[512] = "";
    const attngen_status status =
        desc.scheme == ATTNGEN_SCHEME_ROPE
            ? attngen_rope(q, q_positions, &desc.rope, int32_t(max_position + 1), rotated, message, sizeof message)
            : attngen_xpos(q, q_positions, desc.xpos_scale_base, desc.xpos_centre, /*downscale=*/0, rotated, message,
                           sizeof message);
    if (status != ATTNGEN_OK) fail(status, std::string("desc.keys_rotated: transforming q: ") + message);
    attngen_attention_desc plain = desc;
    plain.scheme = ATTNGEN_SCHEME_SDPA;
    plain.keys_rotated = 0;
    attention(rotated, k, v, out, plain, info);
}

}  // namespace

void attention(const attngen_tensor *q, const attngen_tensor *k, const attngen_tensor *v, const attngen_tensor *out,
               const attngen_attention_desc &desc, attngen_run_info *info) {
    const std::string scheme = scheme_name(desc.scheme);
    const Dims dims = check_core_tensors(q, k, v, out);
    if (check_flag(desc.keys_rotated, "desc.keys_rotated")) {
        attention_over_rotated_keys(q, k, v, out, desc, dims, info);
        return;
    }
    const Controls controls = check_controls(desc);
    Synthesized owned;
    KernelArguments args;
    args.tensors = {{"q", q}, {"k", k}, {"v", v}, {"out", out}};
    args.tensors["kv_len"] = kv_lengths_argument(desc, dims, owned);
    args.floats["scale"] = controls.scale;
    args.ints["mask_kind"] = controls.mask_kind;
    args.ints["window"] = controls.window;
    add_scheme_arguments(desc, dims, args, owned);
    run(scheme, scheme_options(desc), desc, dims, out, args, info);
}

void attention_custom(const std::string &scheme, const std::string &options, const attngen_tensor *q,
                      const attngen_tensor *k, const attngen_tensor *v, const attngen_tensor *out,
                      const attngen_attention_desc &desc, const attngen_named_tensor *tensors, int32_t tensor_count,
                      const attngen_named_scalar *scalars, int32_t scalar_count, attngen_run_info *info) {
    const Dims dims = check_core_tensors(q, k, v, out);
    const Controls controls = check_controls(desc);
    Synthesized owned;
    KernelArguments args;
    args.tensors = {{"q", q}, {"k", k}, {"v", v}, {"out", out}};
    args.tensors["kv_len"] = kv_lengths_argument(desc, dims, owned);
    args.floats["scale"] = controls.scale;
    args.ints["mask_kind"] = controls.mask_kind;
    args.ints["window"] = controls.window;
    if (tensor_count < 0 || scalar_count < 0 || (tensor_count > 0 && !tensors) || (scalar_count > 0 && !scalars)) {
        invalid("custom scheme inputs: counts are negative or arrays are null");
    }
    for (int32_t n = 0; n < tensor_count; n++) {
        const attngen_named_tensor &named = tensors[n];
        if (!named.name) invalid("custom scheme input " + std::to_string(n) + " has no name");
        const attngen_tensor &t = named.tensor;
        DimNames generic;
        for (int d = 0; d < t.rank && d < ATTNGEN_MAX_RANK; d++)
            generic.push_back("dim" + std::to_string(d));
        if (t.rank < 1 || t.rank > ATTNGEN_MAX_RANK)
            invalid(std::string(named.name) + ": rank " + std::to_string(t.rank) + " out of range");
        check_tensor(&t, named.name, t.dtype, generic);
        args.tensors[named.name] = &t;
    }
    for (int32_t n = 0; n < scalar_count; n++) {
        const attngen_named_scalar &named = scalars[n];
        if (!named.name) invalid("custom scheme scalar " + std::to_string(n) + " has no name");
        check_finite(named.value, named.name);
        args.floats[named.name] = float(named.value);
        if (std::nearbyint(named.value) == named.value && std::fabs(named.value) < 2147483647.0) {
            args.ints[named.name] = int32_t(named.value);
        }
    }
    run(scheme, options, desc, dims, out, args, info);
}

}  // namespace attngen::detail

using namespace attngen::detail;

extern "C" {

const char *attngen_scheme_name(attngen_scheme scheme) {
    switch (scheme) {
        case ATTNGEN_SCHEME_SDPA:
            return "sdpa";
        case ATTNGEN_SCHEME_ALIBI:
            return "alibi";
        case ATTNGEN_SCHEME_T5:
            return "t5";
        case ATTNGEN_SCHEME_SHAW:
            return "shaw";
        case ATTNGEN_SCHEME_TXL:
            return "txl";
        case ATTNGEN_SCHEME_DEBERTA:
            return "deberta";
        case ATTNGEN_SCHEME_ROPE:
            return "rope";
        case ATTNGEN_SCHEME_XPOS:
            return "xpos";
    }
    return nullptr;
}

void attngen_attention_desc_init(attngen_attention_desc *desc) {
    if (!desc) return;
    *desc = attngen_attention_desc{};
    desc->scheme = ATTNGEN_SCHEME_SDPA;
    desc->mask = ATTNGEN_MASK_NONE;
    desc->device = ATTNGEN_DEVICE_AUTO;
    desc->t5_bidirectional = 1;
    desc->t5_max_distance = 128;
    desc->rope.pairing = ATTNGEN_ROPE_HALF;
    desc->rope.base = 10000.0;
    desc->rope.scaling = ATTNGEN_ROPE_SCALING_NONE;
    desc->rope.factor = 1.0;
    desc->xpos_scale_base = 512.0;
}

attngen_status attngen_attention(const attngen_tensor *q, const attngen_tensor *k, const attngen_tensor *v,
                                 const attngen_tensor *out, const attngen_attention_desc *desc, attngen_run_info *info,
                                 char *error, size_t error_size) {
    return guarded(error, error_size, [&] {
        if (!desc) invalid("desc is null: initialize one with attngen_attention_desc_init");
        attention(q, k, v, out, *desc, info);
    });
}

attngen_status attngen_attention_custom(const char *scheme, const char *options, const attngen_tensor *q,
                                        const attngen_tensor *k, const attngen_tensor *v, const attngen_tensor *out,
                                        const attngen_attention_desc *desc, const attngen_named_tensor *tensors,
                                        int32_t tensor_count, const attngen_named_scalar *scalars, int32_t scalar_count,
                                        attngen_run_info *info, char *error, size_t error_size) {
    return guarded(error, error_size, [&] {
        if (!scheme || !*scheme) invalid("scheme name is empty");
        if (!desc) invalid("desc is null: initialize one with attngen_attention_desc_init");
        attention_custom(scheme, options ? options : "", q, k, v, out, *desc, tensors, tensor_count, scalars,
                         scalar_count, info);
    });
}

}  // extern "C"
