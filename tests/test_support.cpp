#include "test_support.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <random>
#include <sstream>
#include <stdexcept>

namespace attngen::test {

// ---- random data ----------------------------------------------------------------------------

std::vector<float> random_floats(std::size_t n, uint64_t seed, float lo, float hi) {
    std::mt19937_64 rng(seed);
    std::uniform_real_distribution<float> dist(lo, hi);
    std::vector<float> values(n);
    for (float &x : values)
        x = dist(rng);
    return values;
}

std::vector<int32_t> random_ints(std::size_t n, uint64_t seed, int32_t lo, int32_t hi) {
    std::mt19937_64 rng(seed);
    std::uniform_int_distribution<int32_t> dist(lo, hi);
    std::vector<int32_t> values(n);
    for (int32_t &x : values)
        x = dist(rng);
    return values;
}

std::vector<double> to_double(const std::vector<float> &values) {
    return {values.begin(), values.end()};
}
std::vector<double> to_double(const std::vector<int32_t> &values) {
    return {values.begin(), values.end()};
}

// ---- cases ------------------------------------------------------------------------------------

std::size_t AttnCase::q_size() const {
    return std::size_t(batch) * heads * q_len * head_dim;
}
std::size_t AttnCase::kv_size() const {
    return std::size_t(batch) * kv_heads * k_len * head_dim;
}

namespace {
const char *scheme_label(attngen_scheme s) {
    const char *name = attngen_scheme_name(s);
    return name ? name : "?";
}
const char *mask_label(attngen_mask m) {
    switch (m) {
        case ATTNGEN_MASK_NONE:
            return "none";
        case ATTNGEN_MASK_CAUSAL:
            return "causal";
        case ATTNGEN_MASK_SLIDING_WINDOW:
            return "window";
    }
    return "?";
}
const char *device_label(attngen_device d) {
    switch (d) {
        case ATTNGEN_DEVICE_AUTO:
            return "auto";
        case ATTNGEN_DEVICE_CPU:
            return "cpu";
        case ATTNGEN_DEVICE_OPENCL:
            return "opencl";
        case ATTNGEN_DEVICE_CUDA:
            return "cuda";
    }
    return "?";
}
}  // namespace

std::string AttnCase::describe() const {
    std::ostringstream s;
    s << "case: scheme=" << scheme_label(scheme) << " B=" << batch << " H=" << heads << " Hkv=" << kv_heads
      << " Lq=" << q_len << " Lk=" << k_len << " D=" << head_dim << " mask=" << mask_label(mask);
    if (mask == ATTNGEN_MASK_SLIDING_WINDOW) s << " window=" << window;
    if (scale != 0) s << " scale=" << scale;
    s << " device=" << device_label(device);
    if (!kv_lengths.empty()) {
        s << " kv_lengths=[";
        for (size_t n = 0; n < kv_lengths.size(); n++)
            s << (n ? "," : "") << kv_lengths[n];
        s << "]";
    }
    if (!q_positions.empty()) s << " explicit q_positions";
    if (!k_positions.empty()) s << " explicit k_positions";
    switch (scheme) {
        case ATTNGEN_SCHEME_ALIBI:
            s << " slopes=" << (alibi_slopes.empty() ? "default" : "explicit") << " symmetric=" << alibi_symmetric;
            break;
        case ATTNGEN_SCHEME_T5:
            s << " buckets=" << t5_num_buckets << " max_distance=" << t5_max_distance
              << " bidirectional=" << t5_bidirectional;
            break;
        case ATTNGEN_SCHEME_SHAW:
            s << " K=" << shaw_clip << " values=" << !shaw_values.empty();
            break;
        case ATTNGEN_SCHEME_DEBERTA:
            s << " span=" << deberta_span << " bucket_size=" << deberta_bucket_size
              << " max_position=" << deberta_max_position;
            break;
        case ATTNGEN_SCHEME_ROPE:
            s << " pairing=" << (rope.pairing == ATTNGEN_ROPE_INTERLEAVED ? "interleaved" : "half")
              << " rot_dim=" << rope.rot_dim << " base=" << rope.base << " scaling=" << int(rope.scaling)
              << " factor=" << rope.factor;
            break;
        case ATTNGEN_SCHEME_XPOS:
            s << " scale_base=" << xpos_scale_base;
            if (xpos_centre_set) s << " centre=" << xpos_centre;
            break;
        default:
            break;
    }
    return s.str();
}

AttnCase make_case(int batch, int heads, int kv_heads, int q_len, int k_len, int head_dim, uint64_t seed) {
    AttnCase c;
    c.batch = batch;
    c.heads = heads;
    c.kv_heads = kv_heads;
    c.q_len = q_len;
    c.k_len = k_len;
    c.head_dim = head_dim;
    c.q = random_floats(c.q_size(), seed * 3 + 1);
    c.k = random_floats(c.kv_size(), seed * 3 + 2);
    c.v = random_floats(c.kv_size(), seed * 3 + 3);
    attngen_attention_desc defaults;
    attngen_attention_desc_init(&defaults);
    c.rope = defaults.rope;
    return c;
}

void set_alibi(AttnCase &c, bool explicit_slopes, bool symmetric, uint64_t seed) {
    c.scheme = ATTNGEN_SCHEME_ALIBI;
    c.alibi_symmetric = symmetric;
    c.alibi_slopes = explicit_slopes ? random_floats(c.heads, seed, 0.01f, 0.6f) : std::vector<float>{};
}

void set_t5(AttnCase &c, int num_buckets, int max_distance, bool bidirectional, uint64_t seed) {
    c.scheme = ATTNGEN_SCHEME_T5;
    c.t5_num_buckets = num_buckets;
    c.t5_max_distance = max_distance;
    c.t5_bidirectional = bidirectional;
    c.t5_table = random_floats(std::size_t(num_buckets) * c.heads, seed, -2.f, 2.f);
}

void set_shaw(AttnCase &c, int clip, bool with_values, uint64_t seed) {
    c.scheme = ATTNGEN_SCHEME_SHAW;
    c.shaw_clip = clip;
    const std::size_t n = std::size_t(2 * clip + 1) * c.head_dim;
    c.shaw_keys = random_floats(n, seed);
    c.shaw_values = with_values ? random_floats(n, seed + 1000) : std::vector<float>{};
}

void set_txl(AttnCase &c, uint64_t seed) {
    c.scheme = ATTNGEN_SCHEME_TXL;
    c.txl_r = random_floats(std::size_t(c.heads) * c.k_len * c.head_dim, seed);
    c.txl_u = random_floats(std::size_t(c.heads) * c.head_dim, seed + 1000, -0.5f, 0.5f);
    c.txl_v = random_floats(std::size_t(c.heads) * c.head_dim, seed + 2000, -0.5f, 0.5f);
}

void set_deberta(AttnCase &c, int span, int bucket_size, int max_position, uint64_t seed) {
    c.scheme = ATTNGEN_SCHEME_DEBERTA;
    c.deberta_span = span;
    c.deberta_bucket_size = bucket_size;
    c.deberta_max_position = max_position;
    const std::size_t n = std::size_t(c.heads) * 2 * span * c.head_dim;
    c.deberta_pos_key = random_floats(n, seed);
    c.deberta_pos_query = random_floats(n, seed + 1000);
}

void set_rope(AttnCase &c, attngen_rope_pairing pairing, int rot_dim, double base) {
    c.scheme = ATTNGEN_SCHEME_ROPE;
    c.rope.pairing = pairing;
    c.rope.rot_dim = rot_dim;
    c.rope.base = base;
}

void set_xpos(AttnCase &c, double scale_base) {
    c.scheme = ATTNGEN_SCHEME_XPOS;
    c.xpos_scale_base = scale_base;
}

void poison_padding(AttnCase &c) {
    const float poison[] = {std::numeric_limits<float>::quiet_NaN(), std::numeric_limits<float>::infinity(),
                            -std::numeric_limits<float>::infinity(), 3e38f};
    for (int b = 0; b < int(c.kv_lengths.size()); b++) {
        for (int g = 0; g < c.kv_heads; g++) {
            for (int j = std::max(c.kv_lengths[b], 0); j < c.k_len; j++) {
                const std::size_t row = ((std::size_t(b) * c.kv_heads + g) * c.k_len + j) * c.head_dim;
                for (int d = 0; d < c.head_dim; d++) {
                    c.k[row + d] = poison[(j + d) % 4];
                    c.v[row + d] = poison[(j + d + 1) % 4];
                }
            }
        }
    }
}

AttnCase last_query_rows(const AttnCase &c, int rows) {
    AttnCase r = c;
    r.q_len = rows;
    r.q.clear();
    const int skip = c.q_len - rows;
    for (int b = 0; b < c.batch; b++) {
        for (int h = 0; h < c.heads; h++) {
            const auto first =
                c.q.begin() + std::ptrdiff_t(((std::size_t(b) * c.heads + h) * c.q_len + skip) * c.head_dim);
            r.q.insert(r.q.end(), first, first + std::ptrdiff_t(std::size_t(rows) * c.head_dim));
        }
    }
    if (!c.q_positions.empty()) {
        r.q_positions.clear();
        for (int b = 0; b < c.batch; b++) {
            const auto first = c.q_positions.begin() + std::ptrdiff_t(std::size_t(b) * c.q_len + skip);
            r.q_positions.insert(r.q_positions.end(), first, first + rows);
        }
    }
    return r;
}

std::vector<float> output_row(const AttnCase &c, const std::vector<float> &out, int b, int h, int i) {
    const std::size_t off = ((std::size_t(b) * c.heads + h) * c.q_len + i) * c.head_dim;
    return {out.begin() + std::ptrdiff_t(off), out.begin() + std::ptrdiff_t(off + c.head_dim)};
}

AttnCase random_case(uint64_t seed, const std::vector<int> &head_dims) {
    std::mt19937_64 rng(seed * 7919 + 17);
    auto pick = [&](int lo, int hi) { return std::uniform_int_distribution<int>(lo, hi)(rng); };
    const int batch = pick(1, 3), kv_heads = pick(1, 3), group = pick(1, 3);
    const int q_len = pick(0, 3) == 0 ? 1 : pick(2, 40);
    const int k_len = pick(1, 40);
    const int head_dim = head_dims[std::size_t(pick(0, int(head_dims.size()) - 1))];
    AttnCase c = make_case(batch, kv_heads * group, kv_heads, q_len, k_len, head_dim, seed);
    c.mask = attngen_mask(pick(0, 2));
    if (c.mask == ATTNGEN_MASK_SLIDING_WINDOW) c.window = pick(1, 10);
    if (pick(0, 2) == 0) {
        c.kv_lengths.resize(std::size_t(batch));
        for (int32_t &n : c.kv_lengths)
            n = pick(0, k_len);
    }
    if (pick(0, 4) == 0) c.scale = float(pick(5, 40)) / 100.f;
    return c;
}

void set_random_scheme(AttnCase &c, attngen_scheme scheme, uint64_t seed) {
    std::mt19937_64 rng(seed * 104729 + 3);
    auto pick = [&](int lo, int hi) { return std::uniform_int_distribution<int>(lo, hi)(rng); };
    switch (scheme) {
        case ATTNGEN_SCHEME_SDPA:
            c.scheme = ATTNGEN_SCHEME_SDPA;
            break;
        case ATTNGEN_SCHEME_ALIBI:
            set_alibi(c, pick(0, 1) == 1, c.mask == ATTNGEN_MASK_NONE && pick(0, 1) == 1, seed);
            break;
        case ATTNGEN_SCHEME_T5: {
            static const int params[][2] = {{8, 20}, {16, 32}, {32, 128}, {32, 24}};
            const auto &p = params[pick(0, 3)];
            set_t5(c, p[0], p[1], pick(0, 1) == 1, seed);
            for (float &x : c.q)
                x *= 0.3f;  // no default scaling: keep logits moderate
            break;
        }
        case ATTNGEN_SCHEME_SHAW:
            set_shaw(c, pick(1, 6), pick(0, 2) != 0, seed);
            break;
        case ATTNGEN_SCHEME_TXL:
            set_txl(c, seed);
            break;
        case ATTNGEN_SCHEME_DEBERTA:
            switch (pick(0, 2)) {
                case 0:
                    set_deberta(c, pick(1, 8), 0, 0, seed);
                    break;
                case 1:
                    set_deberta(c, 4, 4, 16, seed);
                    break;
                default:
                    set_deberta(c, 8, 8, 32, seed);
                    break;
            }
            break;
        case ATTNGEN_SCHEME_ROPE: {
            const int max_rot = c.head_dim - c.head_dim % 2;
            const int rot = pick(0, 1) == 0 && c.head_dim % 2 == 0 ? 0 : 2 * pick(1, max_rot / 2);
            set_rope(c, pick(0, 1) == 0 ? ATTNGEN_ROPE_HALF : ATTNGEN_ROPE_INTERLEAVED, rot,
                     pick(0, 1) == 0 ? 10000.0 : 500000.0);
            c.rope.scaling = attngen_rope_scaling_type(pick(0, 4));
            c.rope.factor = 1.0 + pick(1, 7);
            c.rope.max_position_embeddings = pick(8, 48);
            c.rope.low_freq_factor = 1;
            c.rope.high_freq_factor = 4;
            c.rope.original_max_position_embeddings = pick(16, 128);
            const int effective_rot = rot == 0 ? c.head_dim : rot;
            if (c.rope.scaling == ATTNGEN_ROPE_SCALING_DYNAMIC_NTK && effective_rot <= 2) {
                c.rope.scaling = ATTNGEN_ROPE_SCALING_LINEAR;  // dynamic NTK rejects one pair (base^inf)
            }
            break;
        }
        case ATTNGEN_SCHEME_XPOS:
            set_xpos(c, std::vector<double>{32.0, 64.0, 512.0}[std::size_t(pick(0, 2))]);
            break;
    }
}

// ---- descriptor -------------------------------------------------------------------------------

namespace {
template <typename T>
Tensor view_of(const std::vector<T> &values, std::initializer_list<int64_t> shape) {
    return attngen::tensor(values.data(), shape);
}
}  // namespace

attngen_attention_desc make_desc(const AttnCase &c) {
    attngen_attention_desc d;
    attngen_attention_desc_init(&d);
    d.scheme = c.scheme;
    d.mask = c.mask;
    d.window = c.window;
    d.scale = c.scale;
    d.device = c.device;
    d.keys_rotated = c.keys_rotated ? 1 : 0;
    if (!c.kv_lengths.empty()) d.kv_lengths = view_of(c.kv_lengths, {int64_t(c.kv_lengths.size())});
    if (!c.q_positions.empty()) d.q_positions = view_of(c.q_positions, {c.batch, c.q_len});
    if (!c.k_positions.empty()) d.k_positions = view_of(c.k_positions, {c.batch, c.k_len});
    switch (c.scheme) {
        case ATTNGEN_SCHEME_ALIBI:
            if (!c.alibi_slopes.empty()) d.alibi_slopes = view_of(c.alibi_slopes, {int64_t(c.alibi_slopes.size())});
            d.alibi_symmetric = c.alibi_symmetric ? 1 : 0;
            break;
        case ATTNGEN_SCHEME_T5:
            d.t5_table = view_of(c.t5_table, {c.t5_num_buckets, c.heads});
            d.t5_bidirectional = c.t5_bidirectional ? 1 : 0;
            d.t5_max_distance = c.t5_max_distance;
            break;
        case ATTNGEN_SCHEME_SHAW:
            d.shaw_keys = view_of(c.shaw_keys, {2 * c.shaw_clip + 1, c.head_dim});
            if (!c.shaw_values.empty()) d.shaw_values = view_of(c.shaw_values, {2 * c.shaw_clip + 1, c.head_dim});
            break;
        case ATTNGEN_SCHEME_TXL:
            d.txl_r = view_of(c.txl_r, {c.heads, c.k_len, c.head_dim});
            d.txl_u = view_of(c.txl_u, {c.heads, c.head_dim});
            d.txl_v = view_of(c.txl_v, {c.heads, c.head_dim});
            break;
        case ATTNGEN_SCHEME_DEBERTA:
            d.deberta_pos_key = view_of(c.deberta_pos_key, {c.heads, 2 * c.deberta_span, c.head_dim});
            d.deberta_pos_query = view_of(c.deberta_pos_query, {c.heads, 2 * c.deberta_span, c.head_dim});
            d.deberta_bucket_size = c.deberta_bucket_size;
            d.deberta_max_position = c.deberta_max_position;
            break;
        case ATTNGEN_SCHEME_ROPE:
            d.rope = c.rope;
            break;
        case ATTNGEN_SCHEME_XPOS:
            d.xpos_scale_base = c.xpos_scale_base;
            d.xpos_centre_set = c.xpos_centre_set ? 1 : 0;
            d.xpos_centre = c.xpos_centre;
            break;
        default:
            break;
    }
    return d;
}

// ---- reference --------------------------------------------------------------------------------

ref::Problem ref_problem(const AttnCase &c) {
    ref::Problem p;
    p.batch = c.batch;
    p.heads = c.heads;
    p.kv_heads = c.kv_heads;
    p.q_len = c.q_len;
    p.k_len = c.k_len;
    p.head_dim = c.head_dim;
    p.q = to_double(c.q);
    p.k = to_double(c.k);
    p.v = to_double(c.v);
    p.mask = c.mask == ATTNGEN_MASK_CAUSAL           ? ref::Mask::Causal
             : c.mask == ATTNGEN_MASK_SLIDING_WINDOW ? ref::Mask::SlidingWindow
                                                     : ref::Mask::None;
    p.window = c.window;
    p.kv_len.assign(c.kv_lengths.begin(), c.kv_lengths.end());
    p.scale = c.scale;
    return p;
}

std::vector<double> reference_inv_freq(const attngen_rope_params &rope, int head_dim, int seq_len,
                                       double *attention_factor) {
    const int rot = rope.rot_dim == 0 ? head_dim : rope.rot_dim;
    if (attention_factor) *attention_factor = 1.0;
    switch (rope.scaling) {
        case ATTNGEN_ROPE_SCALING_NONE:
            return ref::rope_inv_freq(rot, rope.base);
        case ATTNGEN_ROPE_SCALING_LINEAR:
            return ref::rope_inv_freq_linear(rot, rope.base, rope.factor);
        case ATTNGEN_ROPE_SCALING_DYNAMIC_NTK:
            return ref::rope_inv_freq_dynamic_ntk(rot, rope.base, rope.factor, rope.max_position_embeddings, seq_len);
        case ATTNGEN_ROPE_SCALING_LLAMA3:
            return ref::rope_inv_freq_llama3(rot, rope.base, rope.factor, rope.low_freq_factor, rope.high_freq_factor,
                                             rope.original_max_position_embeddings);
        case ATTNGEN_ROPE_SCALING_YARN: {
            double factor = 1;
            std::vector<double> f =
                ref::rope_inv_freq_yarn(rot, rope.base, rope.factor, rope.original_max_position_embeddings,
                                        rope.beta_fast, rope.beta_slow, &factor);
            if (rope.attention_factor != 0) factor = rope.attention_factor;
            if (attention_factor) *attention_factor = factor;
            return f;
        }
    }
    throw std::invalid_argument("reference_inv_freq: unknown scaling");
}

ref::Scheme ref_scheme(const AttnCase &c) {
    switch (c.scheme) {
        case ATTNGEN_SCHEME_SDPA:
            return ref::Sdpa{};
        case ATTNGEN_SCHEME_ALIBI: {
            ref::Alibi a;
            a.slopes = c.alibi_slopes.empty() ? ref::alibi_slopes(c.heads) : to_double(c.alibi_slopes);
            a.symmetric = c.alibi_symmetric;
            return a;
        }
        case ATTNGEN_SCHEME_T5: {
            ref::T5 t;
            t.table = to_double(c.t5_table);
            t.num_buckets = c.t5_num_buckets;
            t.max_distance = c.t5_max_distance;
            t.bidirectional = c.t5_bidirectional;
            return t;
        }
        case ATTNGEN_SCHEME_SHAW: {
            ref::Shaw s;
            s.clip = c.shaw_clip;
            s.rel_keys = to_double(c.shaw_keys);
            s.rel_values = to_double(c.shaw_values);
            return s;
        }
        case ATTNGEN_SCHEME_TXL: {
            ref::TransformerXL x;
            x.r = to_double(c.txl_r);
            x.u = to_double(c.txl_u);
            x.v = to_double(c.txl_v);
            return x;
        }
        case ATTNGEN_SCHEME_DEBERTA: {
            ref::Deberta d;
            d.pos_key = to_double(c.deberta_pos_key);
            d.pos_query = to_double(c.deberta_pos_query);
            d.span = c.deberta_span;
            d.bucket_size = c.deberta_bucket_size;
            d.max_position = c.deberta_max_position;
            return d;
        }
        case ATTNGEN_SCHEME_ROPE: {
            ref::Rope r;
            r.pairing = c.rope.pairing == ATTNGEN_ROPE_INTERLEAVED ? ref::Pairing::Interleaved : ref::Pairing::Half;
            r.rot_dim = c.rope.rot_dim;
            r.q_positions = to_double(c.q_positions);
            r.k_positions = to_double(c.k_positions);
            // seq_len for dynamic NTK: max(position ids) + 1 over queries and keys (given or default).
            int max_position = 0;
            if (c.q_positions.empty()) {
                if (c.q_len > 0) max_position = std::max(max_position, c.k_len - 1);
            } else {
                for (int32_t p : c.q_positions)
                    max_position = std::max(max_position, int(p));
            }
            if (c.k_positions.empty()) {
                max_position = std::max(max_position, c.k_len - 1);
            } else {
                for (int32_t p : c.k_positions)
                    max_position = std::max(max_position, int(p));
            }
            r.inv_freq = reference_inv_freq(c.rope, c.head_dim, max_position + 1, &r.attention_factor);
            return r;
        }
        case ATTNGEN_SCHEME_XPOS: {
            ref::Xpos x;
            x.scale_base = c.xpos_scale_base;
            x.q_positions = to_double(c.q_positions);
            x.k_positions = to_double(c.k_positions);
            if (c.xpos_centre_set) {
                if (c.xpos_centre == 0) throw std::invalid_argument("the reference cannot express an xPos centre of 0");
                x.centre = c.xpos_centre;
            }
            return x;
        }
    }
    throw std::invalid_argument("ref_scheme: unknown scheme");
}

std::vector<double> reference_output(const AttnCase &c) {
    return ref::attention(ref_problem(c), ref_scheme(c));
}

// ---- running ----------------------------------------------------------------------------------

Tensor q_tensor(const AttnCase &c) {
    return attngen::tensor(c.q.data(), {c.batch, c.heads, c.q_len, c.head_dim});
}
Tensor k_tensor(const AttnCase &c) {
    return attngen::tensor(c.k.data(), {c.batch, c.kv_heads, c.k_len, c.head_dim});
}
Tensor v_tensor(const AttnCase &c) {
    return attngen::tensor(c.v.data(), {c.batch, c.kv_heads, c.k_len, c.head_dim});
}
Tensor out_tensor(const AttnCase &c, std::vector<float> &out) {
    return attngen::tensor(out.data(), {c.batch, c.heads, c.q_len, c.head_dim});
}

Status run_views(const AttnCase &c, const Tensor &q, const Tensor &k, const Tensor &v, const Tensor &out,
                 RunInfo *info) {
    const attngen_attention_desc desc = make_desc(c);
    return attngen::attention(q, k, v, out, desc, info);
}

Status run_attngen(const AttnCase &c, std::vector<float> &out, RunInfo *info) {
    out.assign(std::max<std::size_t>(c.q_size(), 1), std::numeric_limits<float>::quiet_NaN());
    Status status = run_views(c, q_tensor(c), k_tensor(c), v_tensor(c), out_tensor(c, out), info);
    out.resize(c.q_size());
    return status;
}

// ---- strided layouts -------------------------------------------------------------------------

void scatter4(const std::vector<float> &dense, const int64_t shape[4], const int64_t strides[4],
              std::vector<float> &storage) {
    std::size_t flat = 0;
    for (int64_t a = 0; a < shape[0]; a++)
        for (int64_t b = 0; b < shape[1]; b++)
            for (int64_t c = 0; c < shape[2]; c++)
                for (int64_t d = 0; d < shape[3]; d++)
                    storage[std::size_t(a * strides[0] + b * strides[1] + c * strides[2] + d * strides[3])] =
                        dense[flat++];
}

std::vector<float> gather4(const std::vector<float> &storage, const int64_t shape[4], const int64_t strides[4]) {
    std::vector<float> dense;
    dense.reserve(std::size_t(shape[0] * shape[1] * shape[2] * shape[3]));
    for (int64_t a = 0; a < shape[0]; a++)
        for (int64_t b = 0; b < shape[1]; b++)
            for (int64_t c = 0; c < shape[2]; c++)
                for (int64_t d = 0; d < shape[3]; d++)
                    dense.push_back(
                        storage[std::size_t(a * strides[0] + b * strides[1] + c * strides[2] + d * strides[3])]);
    return dense;
}

// ---- error measures ---------------------------------------------------------------------------

namespace {
template <typename Want>
Comparison compare_impl(const std::vector<float> &got, const std::vector<Want> &want, double atol, double rtol) {
    Comparison r;
    std::ostringstream text;
    if (got.size() != want.size()) {
        r.ok = false;
        text << "size mismatch: got " << got.size() << " elements, want " << want.size();
        r.text = text.str();
        return r;
    }
    r.count = got.size();
    double worst_excess = -1;
    for (std::size_t n = 0; n < got.size(); n++) {
        const double g = got[n], w = double(want[n]);
        const double diff = std::isfinite(g) ? std::fabs(g - w) : std::numeric_limits<double>::infinity();
        const double allowed = atol + rtol * std::fabs(w);
        const bool bad = !(diff <= allowed);
        if (bad) r.failures++;
        r.max_abs = std::max(r.max_abs, diff);
        if (std::fabs(w) > 1e-30) r.max_rel = std::max(r.max_rel, diff / std::fabs(w));
        const double excess = diff - allowed;
        if (excess > worst_excess || n == 0) {
            worst_excess = excess;
            r.worst = n;
            r.got_at_worst = g;
            r.want_at_worst = w;
        }
    }
    r.ok = r.failures == 0;
    text.precision(9);
    text << (r.ok ? "match" : "MISMATCH") << ": " << r.failures << " of " << r.count
         << " elements outside atol=" << atol << " rtol=" << rtol << "; max abs err " << r.max_abs << ", max rel err "
         << r.max_rel << "; worst at flat index " << r.worst << ": got " << r.got_at_worst << ", want "
         << r.want_at_worst;
    r.text = text.str();
    return r;
}
}  // namespace

Comparison compare(const std::vector<float> &got, const std::vector<double> &want, double atol, double rtol) {
    return compare_impl(got, want, atol, rtol);
}

Comparison compare(const std::vector<float> &got, const std::vector<float> &want, double atol, double rtol) {
    return compare_impl(got, want, atol, rtol);
}

double max_abs_error(const std::vector<float> &got, const std::vector<double> &want) {
    return compare(got, want, 0, 0).max_abs;
}

double max_rel_error(const std::vector<float> &got, const std::vector<double> &want) {
    return compare(got, want, 0, 0).max_rel;
}

bool build_has_device(const std::string &device) {
    const std::string list = attngen_kernel_list();
    return list.find(" " + device + "\n") != std::string::npos;
}

bool cuda_runs_here() {
    return build_has_device("cuda") && attngen_device_available(ATTNGEN_DEVICE_CUDA);
}

}  // namespace attngen::test
