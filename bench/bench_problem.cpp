#include "bench_problem.h"

#include <cstdlib>
#include <string>

#include "attngen/attngen.hpp"
#include "naive.h"

#include <algorithm>
#include <cmath>
#include <sstream>
#include <stdexcept>

namespace attngen_bench {

const std::vector<SchemeId> &all_schemes() {
    static const std::vector<SchemeId> schemes = {
        SchemeId::Sdpa,     SchemeId::Alibi,           SchemeId::T5,  SchemeId::Shaw, SchemeId::Txl, SchemeId::Deberta,
        SchemeId::RopeHalf, SchemeId::RopeInterleaved, SchemeId::Xpos};
    return schemes;
}

const char *scheme_name(SchemeId s) {
    switch (s) {
        case SchemeId::Sdpa:
            return "sdpa";
        case SchemeId::Alibi:
            return "alibi";
        case SchemeId::T5:
            return "t5";
        case SchemeId::Shaw:
            return "shaw";
        case SchemeId::Txl:
            return "txl";
        case SchemeId::Deberta:
            return "deberta";
        case SchemeId::RopeHalf:
            return "rope_half";
        case SchemeId::RopeInterleaved:
            return "rope_interleaved";
        case SchemeId::Xpos:
            return "xpos";
    }
    return "?";
}

std::string Shape::name() const {
    std::ostringstream s;
    s << batch << "x" << heads << "x" << q_len << "x" << k_len << "x" << head_dim;
    if (kv_heads != heads) s << "_kv" << kv_heads;
    return s.str();
}

std::string Config::name() const {
    return std::string(scheme_name(scheme)) + (causal ? "/causal/" : "/none/") + shape.name();
}

// Flop counting (multiply and add counted separately, i.e. 2 per multiply-accumulate):
//   base      4 B H Lq Lk D: Q K^T and P V. Halved when causal and Lq > 1 (the visible half of the
//             score square; decode rows see every key either way).
//   Shaw      + 2 B H Lq (2K+1) D * 2: q . aK for each of the 2K+1 table rows, and the value term as a
//             (2K+1) x D product per row (probabilities aggregated per clipped distance times aV).
//             Per row, whatever the mask: not halved.
//   TXL       + 2 B H Lq Lk D: (q + v) . R, one R row per score, so halved with the base when causal.
//   DeBERTa   + 2 B H Lq 2span D (c2p: q . Kr for every table row) + 2 B H Lk 2span D (p2c: k . Qr
//             for every key and table row). Per row / per key, not halved.
// The q + u, rotations, softmax and biases are not counted.
double flops(const Config &c) {
    const Shape &s = c.shape;
    double f = 4.0 * s.batch * s.heads * double(s.q_len) * s.k_len * s.head_dim;
    if (c.causal && s.q_len > 1) f *= 0.5;
    return f;
}

bool has_extra_flops(SchemeId s) {
    return s == SchemeId::Shaw || s == SchemeId::Txl || s == SchemeId::Deberta;
}

double flops_with_extra(const Config &c) {
    const Shape &s = c.shape;
    const double bh = double(s.batch) * s.heads, D = s.head_dim;
    double extra = 0;
    switch (c.scheme) {
        case SchemeId::Shaw:
            extra = 2.0 * bh * s.q_len * (2 * kShawClip + 1) * D * 2;
            break;
        case SchemeId::Txl:
            extra = 2.0 * bh * s.q_len * double(s.k_len) * D;
            if (c.causal && s.q_len > 1) extra *= 0.5;
            break;
        case SchemeId::Deberta: {
            // c2p and p2c: a query row (key) times the 2 * span relative-position rows, or one dot
            // product per visible score where that is less (decode: one query row would otherwise be
            // credited Lk x 2 * span products that no implementation needs).
            double scores = double(s.q_len) * s.k_len;
            if (c.causal && s.q_len > 1) scores *= 0.5;
            const double span_rows = 2.0 * kDebertaSpan;
            extra = 2.0 * bh * D * (std::min(s.q_len * span_rows, scores) + std::min(s.k_len * span_rows, scores));
            break;
        }
        default:
            break;
    }
    return flops(c) + extra;
}

double kv_bytes(const Config &c, double bytes_per_element) {
    const Shape &s = c.shape;
    return double(s.batch) * s.kv_heads * s.k_len * s.head_dim * bytes_per_element * 2.0;
}

bool Problem::has_positional_bias() const {
    switch (config.scheme) {
        case SchemeId::Alibi:
        case SchemeId::T5:
        case SchemeId::Shaw:
        case SchemeId::Txl:
        case SchemeId::Deberta:
            return true;
        default:
            return false;
    }
}

namespace {

// splitmix64: fast, seeded uniform floats in [lo, hi).
Floats random_floats(std::size_t n, uint64_t seed, float lo = -1.f, float hi = 1.f) {
    Floats out(n);
    uint64_t state = seed * 0x9E3779B97F4A7C15ull + 0x632BE59BD9B4E019ull;
    for (float &x : out) {
        uint64_t z = (state += 0x9E3779B97F4A7C15ull);
        z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
        z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
        z ^= z >> 31;
        const float unit = float(z >> 40) * (1.0f / 16777216.0f);
        x = lo + (hi - lo) * unit;
    }
    return out;
}

}  // namespace

std::unique_ptr<Problem> make_problem(const Config &c, uint64_t seed) {
    const Shape &s = c.shape;
    if (s.heads % s.kv_heads != 0) throw std::invalid_argument("heads must be a multiple of kv_heads");
    if (s.q_len > s.k_len) throw std::invalid_argument("q_len > k_len is not benchmarked");
    auto p = std::make_unique<Problem>();
    p->config = c;
    p->B = s.batch;
    p->H = s.heads;
    p->Hkv = s.kv_heads;
    p->Lq = s.q_len;
    p->Lk = s.k_len;
    p->D = s.head_dim;
    p->group = s.heads / s.kv_heads;
    p->offset = s.k_len - s.q_len;
    p->q = random_floats(p->q_size(), seed * 16 + 1);
    p->k = random_floats(p->kv_size(), seed * 16 + 2);
    p->v = random_floats(p->kv_size(), seed * 16 + 3);
    const int D = p->D, Lk = p->Lk;
    p->scale = 1.f / std::sqrt(float(D));
    auto index_table = [&](auto index_of) {
        std::vector<int32_t> table(std::size_t(2 * Lk - 1));
        for (int delta = -(Lk - 1); delta <= Lk - 1; delta++)
            table[std::size_t(delta + Lk - 1)] = index_of(delta);
        return table;
    };
    attngen::Status status;
    switch (c.scheme) {
        case SchemeId::Sdpa:
            break;
        case SchemeId::Alibi: {
            const std::vector<double> slopes = attngen::alibi_slopes(p->H, &status);
            if (!status) throw std::runtime_error(status.message);
            p->alibi_slopes.assign(slopes.begin(), slopes.end());
            p->alibi_symmetric = !c.causal;  // bidirectional encoders use -slope |p_i - j|
            break;
        }
        case SchemeId::T5:
            p->scale = 1.f;  // T5 folds 1/sqrt(d) into the query projection's initialization
            for (float &x : p->q)
                x *= 1.f / std::sqrt(float(D));
            p->t5_bidirectional = !c.causal;  // encoder buckets without a mask, decoder buckets when causal
            p->t5_table = random_floats(std::size_t(kT5Buckets) * p->H, seed * 16 + 4, -2.f, 2.f);
            p->t5_bucket_of_delta = index_table([&](int delta) {
                const int bucket = attngen::t5_bucket(delta, p->t5_bidirectional, kT5Buckets, kT5MaxDistance, &status);
                if (!status) throw std::runtime_error(status.message);
                return bucket;
            });
            break;
        case SchemeId::Shaw:
            p->shaw_keys = random_floats(std::size_t(2 * kShawClip + 1) * D, seed * 16 + 5);
            p->shaw_values = random_floats(std::size_t(2 * kShawClip + 1) * D, seed * 16 + 6);
            break;
        case SchemeId::Txl:
            p->txl_r = random_floats(std::size_t(p->H) * Lk * D, seed * 16 + 7);
            p->txl_u = random_floats(std::size_t(p->H) * D, seed * 16 + 8, -0.5f, 0.5f);
            p->txl_v = random_floats(std::size_t(p->H) * D, seed * 16 + 9, -0.5f, 0.5f);
            break;
        case SchemeId::Deberta:
            p->scale = 1.f / std::sqrt(3.f * float(D));
            p->deberta_pos_key = random_floats(std::size_t(p->H) * 2 * kDebertaSpan * D, seed * 16 + 10);
            p->deberta_pos_query = random_floats(std::size_t(p->H) * 2 * kDebertaSpan * D, seed * 16 + 11);
            p->deberta_row_of_delta = index_table([&](int delta) {
                const int bucket = attngen::deberta_bucket(-delta, kDebertaBucketSize, kDebertaMaxPosition, &status);
                if (!status) throw std::runtime_error(status.message);
                return std::clamp(bucket + kDebertaSpan, 0, 2 * kDebertaSpan - 1);
            });
            break;
        case SchemeId::RopeHalf:
        case SchemeId::RopeInterleaved:
        case SchemeId::Xpos:
            break;
    }
    if (p->rotary()) {
        const int pairs = D / 2;
        p->q_cos.resize(std::size_t(p->Lq) * pairs);
        p->q_sin.resize(p->q_cos.size());
        p->k_cos.resize(std::size_t(Lk) * pairs);
        p->k_sin.resize(p->k_cos.size());
        if (c.scheme == SchemeId::Xpos) {
            // As the xPos kernel computes its tables (float32): angle n theta_f, theta_f = 10000^(-f/(D/2)),
            // decay zeta_f^((n + centre)/scale_base), zeta_f = (2f + 0.4D)/(1.4D), keys divided by it.
            p->rotary_interleaved = true;
            p->xpos_centre = -((Lk + 1) / 2);
            auto fill = [&](int rows, int position0, bool downscale, Floats &cos_t, Floats &sin_t) {
                for (int n = 0; n < rows; n++)
                    for (int f = 0; f < pairs; f++) {
                        const float position = float(position0 + n);
                        const float inv_freq = 1.f / std::pow(10000.f, float(f) / float(pairs));
                        const float zeta = (2.f * float(f) + 0.4f * float(D)) / (1.4f * float(D));
                        float decay = std::pow(zeta, (position + float(p->xpos_centre)) / float(kXposScaleBase));
                        if (downscale) decay = 1.f / decay;
                        cos_t[std::size_t(n) * pairs + f] = std::cos(position * inv_freq) * decay;
                        sin_t[std::size_t(n) * pairs + f] = std::sin(position * inv_freq) * decay;
                    }
            };
            fill(p->Lq, p->offset, false, p->q_cos, p->q_sin);
            fill(Lk, 0, true, p->k_cos, p->k_sin);
        } else {
            // HF Llama / GPT-J: float32 inv_freq and angles (the runtime's frequencies for seq_len = Lk).
            p->rope = attngen::rope_params(
                c.scheme == SchemeId::RopeHalf ? ATTNGEN_ROPE_HALF : ATTNGEN_ROPE_INTERLEAVED, kRopeBase);
            p->rotary_interleaved = c.scheme == SchemeId::RopeInterleaved;
            const std::vector<float> inv_freq = attngen::rope_inv_freq(p->rope, D, Lk, nullptr, &status);
            if (!status) throw std::runtime_error(status.message);
            auto fill = [&](int rows, int position0, Floats &cos_t, Floats &sin_t) {
                for (int n = 0; n < rows; n++)
                    for (int f = 0; f < pairs; f++) {
                        const float angle = float(position0 + n) * inv_freq[std::size_t(f)];
                        cos_t[std::size_t(n) * pairs + f] = std::cos(angle);
                        sin_t[std::size_t(n) * pairs + f] = std::sin(angle);
                    }
            };
            fill(p->Lq, p->offset, p->q_cos, p->q_sin);
            fill(Lk, 0, p->k_cos, p->k_sin);
        }
    }
    return p;
}

attngen_attention_desc make_desc(const Problem &p) {
    attngen_attention_desc d;
    attngen_attention_desc_init(&d);
    d.mask = p.config.causal ? ATTNGEN_MASK_CAUSAL : ATTNGEN_MASK_NONE;
    // GPU mode (bench/gpu.sh): ATTNGEN_BENCH_DEVICE=cuda|opencl runs the attngen kernels there.
    const char *device = std::getenv("ATTNGEN_BENCH_DEVICE");
    const std::string name = device ? device : "cpu";
    d.device = name == "cuda" ? ATTNGEN_DEVICE_CUDA : name == "opencl" ? ATTNGEN_DEVICE_OPENCL : ATTNGEN_DEVICE_CPU;
    auto view = [](const Floats &values, std::initializer_list<int64_t> shape) {
        return attngen::tensor(values.data(), shape);
    };
    switch (p.config.scheme) {
        case SchemeId::Sdpa:
            d.scheme = ATTNGEN_SCHEME_SDPA;
            break;
        case SchemeId::Alibi:
            d.scheme = ATTNGEN_SCHEME_ALIBI;
            d.alibi_symmetric = p.alibi_symmetric ? 1 : 0;  // slopes: the runtime's default (same rule)
            break;
        case SchemeId::T5:
            d.scheme = ATTNGEN_SCHEME_T5;
            d.t5_table = view(p.t5_table, {kT5Buckets, p.H});
            d.t5_bidirectional = p.t5_bidirectional ? 1 : 0;
            d.t5_max_distance = kT5MaxDistance;
            break;
        case SchemeId::Shaw:
            d.scheme = ATTNGEN_SCHEME_SHAW;
            d.shaw_keys = view(p.shaw_keys, {2 * kShawClip + 1, p.D});
            d.shaw_values = view(p.shaw_values, {2 * kShawClip + 1, p.D});
            break;
        case SchemeId::Txl:
            d.scheme = ATTNGEN_SCHEME_TXL;
            d.txl_r = view(p.txl_r, {p.H, p.Lk, p.D});
            d.txl_u = view(p.txl_u, {p.H, p.D});
            d.txl_v = view(p.txl_v, {p.H, p.D});
            break;
        case SchemeId::Deberta:
            d.scheme = ATTNGEN_SCHEME_DEBERTA;
            d.deberta_pos_key = view(p.deberta_pos_key, {p.H, 2 * kDebertaSpan, p.D});
            d.deberta_pos_query = view(p.deberta_pos_query, {p.H, 2 * kDebertaSpan, p.D});
            d.deberta_bucket_size = kDebertaBucketSize;
            d.deberta_max_position = kDebertaMaxPosition;
            break;
        case SchemeId::RopeHalf:
        case SchemeId::RopeInterleaved:
            d.scheme = ATTNGEN_SCHEME_ROPE;
            d.rope = p.rope;
            break;
        case SchemeId::Xpos:
            d.scheme = ATTNGEN_SCHEME_XPOS;
            d.xpos_scale_base = kXposScaleBase;  // centre: the runtime's default floor(-Lk/2)
            break;
    }
    return d;
}

std::shared_ptr<const Problem> cached_problem(const Config &c) {
    static std::mutex mutex;
    static std::shared_ptr<const Problem> cached;
    static std::string cached_name;
    std::lock_guard<std::mutex> lock(mutex);
    const std::string name = c.name();
    if (!cached || cached_name != name) {
        cached.reset();  // free the previous problem first
        cached = make_problem(c);
        cached_name = name;
    }
    return cached;
}

const std::vector<RefRow> &Problem::reference_rows() const {
    std::call_once(ref_once, [this] {
        // Heads (0,0), the middle one and the last; rows first, middle, last and one near the start.
        std::vector<std::pair<int, int>> heads = {{0, 0}, {B / 2, H / 2}, {B - 1, H - 1}};
        std::vector<int> rows = {0, std::min(Lq - 1, 37), Lq / 2, Lq - 1};
        std::sort(heads.begin(), heads.end());
        heads.erase(std::unique(heads.begin(), heads.end()), heads.end());
        std::sort(rows.begin(), rows.end());
        rows.erase(std::unique(rows.begin(), rows.end()), rows.end());
        const std::size_t head_dim = static_cast<std::size_t>(D), keys = static_cast<std::size_t>(Lk);
        std::vector<double> k_head(keys * head_dim), q_content(head_dim), q_position(head_dim), scores(keys);
        for (const auto &[b, h] : heads) {
            const int kvh = h / group;
            const float *k_raw = this->k_head(b, kvh);
            for (int j = 0; j < Lk; j++) {
                double *kj = k_head.data() + std::size_t(j) * D;
                if (rotary()) {
                    rotate_row(k_raw + std::size_t(j) * D, &k_cos[std::size_t(j) * (D / 2)],
                               &k_sin[std::size_t(j) * (D / 2)], kj);
                } else {
                    for (int d = 0; d < D; d++)
                        kj[d] = k_raw[std::size_t(j) * D + d];
                }
            }
            for (int i : rows) {
                const float *q_raw = q_head(b, h) + std::size_t(i) * D;
                if (rotary()) {
                    rotate_row(q_raw, &q_cos[std::size_t(i) * (D / 2)], &q_sin[std::size_t(i) * (D / 2)],
                               q_content.data());
                } else {
                    for (int d = 0; d < D; d++)
                        q_content[std::size_t(d)] = q_raw[d];
                }
                for (int d = 0; d < D; d++)
                    q_position[std::size_t(d)] = q_raw[d];
                if (config.scheme == SchemeId::Txl) {
                    for (int d = 0; d < D; d++) {
                        q_content[std::size_t(d)] += txl_u[std::size_t(h) * D + d];
                        q_position[std::size_t(d)] += txl_v[std::size_t(h) * D + d];
                    }
                }
                RowInputs<double> in;
                in.q_content = q_content.data();
                in.q_position = q_position.data();
                in.k = k_head.data();
                in.v = v_head(b, kvh);
                RefRow row;
                row.b = b;
                row.h = h;
                row.i = i;
                row.out.resize(std::size_t(D));
                attention_row(*this, h, i, in, scores.data(), row.out.data());
                ref_rows.push_back(std::move(row));
            }
        }
    });
    return ref_rows;
}

Check check_output(const Problem &p, const float *out, bool bf16) {
    // float32 kernels vs a double reference: errors are ~1e-6 for correct kernels; a wrong positional
    // term or mask moves outputs by 1e-2 and more.
    // xPos: the kernel computes its cos/sin/decay tables with Halide's float math, the reference uses
    // libm's; angles up to Lk rad and the decay (up to ~150x for future keys without a mask) amplify
    // those last-bit differences (5.5e-4 observed at Lq = Lk = 2048, mask none): a wider atol, as the
    // conformance cases use for large-position RoPE.
    const double atol = bf16 ? 5e-2 : p.config.scheme == SchemeId::Xpos ? 2e-3 : 2e-4, rtol = bf16 ? 5e-2 : 2e-3;
    Check check;
    double worst_excess = -1e300;
    std::ostringstream text;
    for (const RefRow &row : p.reference_rows()) {
        const float *got = out + ((std::size_t(row.b) * p.H + row.h) * p.Lq + row.i) * p.D;
        for (int d = 0; d < p.D; d++) {
            const double want = row.out[std::size_t(d)], g = got[d];
            const double diff = std::isfinite(g) ? std::fabs(g - want) : 1e300;
            check.max_abs = std::max(check.max_abs, diff);
            const double excess = diff - (atol + rtol * std::fabs(want));
            if (excess > 0) check.ok = false;
            if (excess > worst_excess) {
                worst_excess = excess;
                text.str("");
                text << "row (b=" << row.b << ", h=" << row.h << ", i=" << row.i << ") channel " << d << ": got " << g
                     << ", want " << want;
            }
        }
    }
    check.text = text.str();
    return check;
}

}  // namespace attngen_bench
