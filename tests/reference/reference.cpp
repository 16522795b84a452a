// attngen::ref -- see reference.h for the contract. Plain loops, double precision, no dependencies.
#include "reference.h"

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <stdexcept>
#include <string>

namespace attngen::ref {
namespace {

constexpr double kPi = 3.14159265358979323846;

[[noreturn]] void fail(const std::string &what) {
    throw std::invalid_argument("attngen::ref: " + what);
}

void require(bool ok, const std::string &what) {
    if (!ok) fail(what);
}

std::size_t sz(long long n) {
    return static_cast<std::size_t>(n);
}

void validate_problem(const Problem &p) {
    require(p.batch >= 1 && p.heads >= 1 && p.kv_heads >= 1 && p.q_len >= 1 && p.k_len >= 1 && p.head_dim >= 1,
            "all dimensions must be >= 1");
    require(p.heads % p.kv_heads == 0, "heads must be a multiple of kv_heads");
    const long long B = p.batch, H = p.heads, Hkv = p.kv_heads, Lq = p.q_len, Lk = p.k_len, D = p.head_dim;
    require(p.q.size() == sz(B * H * Lq * D), "q must have batch*heads*q_len*head_dim entries");
    require(p.k.size() == sz(B * Hkv * Lk * D), "k must have batch*kv_heads*k_len*head_dim entries");
    require(p.v.size() == sz(B * Hkv * Lk * D), "v must have batch*kv_heads*k_len*head_dim entries");
    require(p.mask != Mask::SlidingWindow || p.window >= 0, "window must be >= 0");
    require(p.kv_len.empty() || p.kv_len.size() == sz(B), "kv_len must be empty or have batch entries");
    for (int n : p.kv_len)
        require(n >= 0 && n <= p.k_len, "kv_len entries must lie in [0, k_len]");
}

// Absolute position of query row i (bottom-right alignment).
int query_position(const Problem &p, int i) {
    return p.k_len - p.q_len + i;
}

double dot(const double *a, const double *b, int n) {
    double s = 0;
    for (int c = 0; c < n; ++c)
        s += a[c] * b[c];
    return s;
}

// Offsets into the row-major tensors.
std::size_t q_off(const Problem &p, int b, int h, int i) {
    return ((sz(b) * sz(p.heads) + sz(h)) * sz(p.q_len) + sz(i)) * sz(p.head_dim);
}
std::size_t kv_off(const Problem &p, int b, int g, int j) {
    return ((sz(b) * sz(p.kv_heads) + sz(g)) * sz(p.k_len) + sz(j)) * sz(p.head_dim);
}

void check_positions(const std::vector<double> &pos, const Problem &p, int len, const char *name) {
    require(pos.empty() || pos.size() == sz(static_cast<long long>(p.batch) * len),
            std::string(name) + " must be empty or have batch*len entries");
}

double position_or_default(const std::vector<double> &pos, int b, int len, int row, double dflt) {
    return pos.empty() ? dflt : pos[sz(static_cast<long long>(b) * len + row)];
}

// Rotate the first rot channels of x (length >= rot) by angles pos*inv_freq[c], in place.
// cos and sin are multiplied by `factor` (RoPE attention_factor, xPos decay).
void rotate(double *x, int rot, Pairing pairing, const std::vector<double> &inv_freq, double pos, double factor) {
    const int half = rot / 2;
    for (int c = 0; c < half; ++c) {
        const double angle = pos * inv_freq[sz(c)];
        const double cs = std::cos(angle) * factor;
        const double sn = std::sin(angle) * factor;
        const int a = pairing == Pairing::Half ? c : 2 * c;
        const int b = pairing == Pairing::Half ? c + half : 2 * c + 1;
        const double xa = x[a], xb = x[b];
        x[a] = xa * cs - xb * sn;
        x[b] = xb * cs + xa * sn;
    }
}

// Row-wise evaluation of the attention scores of one problem under one scheme.
class Evaluator {
public:
    Evaluator(const Problem &p, const Scheme &s) : p_(p), s_(s) {
        validate_problem(p);
        scale_ = effective_scale(p, s);
        const long long H = p.heads, Lk = p.k_len, D = p.head_dim;
        if (const auto *a = std::get_if<Alibi>(&s)) {
            require(a->slopes.size() == sz(H), "Alibi: slopes must have heads entries");
        } else if (const auto *t = std::get_if<T5>(&s)) {
            require(t->num_buckets >= 1 && t->table.size() == sz(static_cast<long long>(t->num_buckets) * H),
                    "T5: table must be [num_buckets, heads]");
        } else if (const auto *sh = std::get_if<Shaw>(&s)) {
            require(sh->clip >= 0, "Shaw: clip must be >= 0");
            const std::size_t n = sz((2LL * sh->clip + 1) * D);
            require(sh->rel_keys.size() == n, "Shaw: rel_keys must be [2*clip+1, head_dim]");
            require(sh->rel_values.empty() || sh->rel_values.size() == n,
                    "Shaw: rel_values must be empty or [2*clip+1, head_dim]");
        } else if (const auto *x = std::get_if<TransformerXL>(&s)) {
            require(x->r.size() == sz(H * Lk * D), "TransformerXL: r must be [heads, k_len, head_dim]");
            require(x->u.size() == sz(H * D) && x->v.size() == sz(H * D),
                    "TransformerXL: u and v must be [heads, head_dim]");
        } else if (const auto *d = std::get_if<Deberta>(&s)) {
            require(d->span >= 1, "Deberta: span must be >= 1");
            const std::size_t n = sz(H * 2LL * d->span * D);
            require(d->pos_key.size() == n && d->pos_query.size() == n,
                    "Deberta: pos_key and pos_query must be [heads, 2*span, head_dim]");
        }
        if (const auto *r = std::get_if<Rope>(&s)) {
            TransformedQK t = rope_apply(p, *r);
            q_ = std::move(t.q);
            k_ = std::move(t.k);
        } else if (const auto *x = std::get_if<Xpos>(&s)) {
            TransformedQK t = xpos_apply(p, *x);
            q_ = std::move(t.q);
            k_ = std::move(t.k);
        } else {
            q_ = p.q;
            k_ = p.k;
        }
    }

    int kv_head(int h) const { return h / (p_.heads / p_.kv_heads); }

    // Pre-softmax score of query row i and key j (only called for allowed entries).
    double score(int b, int h, int i, int j) const {
        const int D = p_.head_dim;
        const int g = kv_head(h);
        const double *q = &q_[q_off(p_, b, h, i)];
        const double *k = &k_[kv_off(p_, b, g, j)];
        const int pi = query_position(p_, i);
        const double qk = dot(q, k, D);

        if (const auto *a = std::get_if<Alibi>(&s_)) {
            const double dist = static_cast<double>(pi) - static_cast<double>(j);
            const double slope = a->slopes[sz(h)];
            return scale_ * qk - slope * (a->symmetric ? std::fabs(dist) : dist);
        }
        if (const auto *t = std::get_if<T5>(&s_)) {
            const int bucket = t5_bucket(j - pi, t->bidirectional, t->num_buckets, t->max_distance);
            return scale_ * qk + t->table[sz(static_cast<long long>(bucket) * p_.heads + h)];
        }
        if (const auto *sh = std::get_if<Shaw>(&s_)) {
            const int idx = shaw_index(*sh, pi, j);
            return scale_ * (qk + dot(q, &sh->rel_keys[sz(static_cast<long long>(idx) * D)], D));
        }
        if (const auto *x = std::get_if<TransformerXL>(&s_)) {
            // Row t of r encodes distance k_len-1-t; distance p_i - j lives in row k_len-1-(p_i-j).
            // Non-causal entries (j > p_i) would index past the table: clamp to k_len-1 (distance 0).
            int row = p_.k_len - 1 - (pi - j);
            row = std::clamp(row, 0, p_.k_len - 1);
            const double *u = &x->u[sz(static_cast<long long>(h) * D)];
            const double *v = &x->v[sz(static_cast<long long>(h) * D)];
            const double *r = &x->r[sz((static_cast<long long>(h) * p_.k_len + row) * D)];
            double ac = 0, bd = 0;
            for (int c = 0; c < D; ++c) {
                ac += (q[c] + u[c]) * k[c];
                bd += (q[c] + v[c]) * r[c];
            }
            return scale_ * (ac + bd);
        }
        if (const auto *d = std::get_if<Deberta>(&s_)) {
            int rel = pi - j;  // query minus key
            if (d->bucket_size > 0 && d->max_position > 0)
                rel = deberta_log_bucket(rel, d->bucket_size, d->max_position);
            const int idx = std::clamp(rel + d->span, 0, 2 * d->span - 1);
            const std::size_t off = sz((static_cast<long long>(h) * 2 * d->span + idx) * D);
            const double c2p = dot(q, &d->pos_key[off], D);
            const double p2c = dot(k, &d->pos_query[off], D);
            return scale_ * (qk + c2p + p2c);
        }
        // Sdpa, Rope, Xpos: plain scaled dot product of the (transformed) q and k.
        return scale_ * qk;
    }

    // Softmax probabilities of row (b, h, i) into row (size k_len). Returns false (row all zeros)
    // when no key is allowed.
    bool probs_row(int b, int h, int i, std::vector<double> &row) const {
        row.assign(sz(p_.k_len), 0.0);
        std::vector<char> ok(sz(p_.k_len), 0);
        bool any = false;
        double mx = 0;
        for (int j = 0; j < p_.k_len; ++j) {
            if (!is_allowed(p_, b, i, j)) continue;
            ok[sz(j)] = 1;
            row[sz(j)] = score(b, h, i, j);
            if (!any || row[sz(j)] > mx) mx = row[sz(j)];
            any = true;
        }
        if (!any) return false;
        double sum = 0;
        for (int j = 0; j < p_.k_len; ++j) {
            row[sz(j)] = ok[sz(j)] ? std::exp(row[sz(j)] - mx) : 0.0;
            sum += row[sz(j)];
        }
        for (int j = 0; j < p_.k_len; ++j)
            row[sz(j)] /= sum;
        return true;
    }

    // out_i = sum_j p_ij (v_j [+ Shaw rel_values[idx]]).
    void output_row(int b, int h, int i, const std::vector<double> &row, double *out) const {
        const int D = p_.head_dim;
        const int g = kv_head(h);
        const int pi = query_position(p_, i);
        const auto *sh = std::get_if<Shaw>(&s_);
        const bool value_term = sh != nullptr && !sh->rel_values.empty();
        for (int c = 0; c < D; ++c)
            out[c] = 0;
        for (int j = 0; j < p_.k_len; ++j) {
            const double w = row[sz(j)];
            if (w == 0) continue;
            const double *v = &p_.v[kv_off(p_, b, g, j)];
            for (int c = 0; c < D; ++c)
                out[c] += w * v[c];
            if (value_term) {
                const double *av = &sh->rel_values[sz(static_cast<long long>(shaw_index(*sh, pi, j)) * D)];
                for (int c = 0; c < D; ++c)
                    out[c] += w * av[c];
            }
        }
    }

private:
    static int shaw_index(const Shaw &sh, int pi, int j) { return std::clamp(j - pi, -sh.clip, sh.clip) + sh.clip; }

    const Problem &p_;
    const Scheme &s_;
    double scale_ = 1;
    std::vector<double> q_, k_;  // q and k after RoPE / xPos (copies otherwise)
};

}  // namespace

// ---- attention ------------------------------------------------------------------------------

double effective_scale(const Problem &p, const Scheme &s) {
    if (p.scale > 0) return p.scale;
    const double D = static_cast<double>(p.head_dim);
    if (std::holds_alternative<T5>(s)) return 1.0;
    if (std::holds_alternative<Deberta>(s)) return 1.0 / std::sqrt(3.0 * D);
    return 1.0 / std::sqrt(D);
}

bool is_allowed(const Problem &p, int b, int i, int j) {
    if (!p.kv_len.empty() && j >= p.kv_len[sz(b)]) return false;
    const int pi = query_position(p, i);
    switch (p.mask) {
        case Mask::None:
            return true;
        case Mask::Causal:
            return j <= pi;
        case Mask::SlidingWindow:
            return j <= pi && pi - j < p.window;
    }
    return false;
}

std::vector<double> probabilities(const Problem &p, const Scheme &s) {
    const Evaluator ev(p, s);
    std::vector<double> probs(sz(static_cast<long long>(p.batch) * p.heads * p.q_len * p.k_len));
    std::vector<double> row;
    for (int b = 0; b < p.batch; ++b)
        for (int h = 0; h < p.heads; ++h)
            for (int i = 0; i < p.q_len; ++i) {
                ev.probs_row(b, h, i, row);
                const std::size_t base = ((sz(b) * sz(p.heads) + sz(h)) * sz(p.q_len) + sz(i)) * sz(p.k_len);
                std::copy(row.begin(), row.end(), probs.begin() + static_cast<std::ptrdiff_t>(base));
            }
    return probs;
}

std::vector<double> attention(const Problem &p, const Scheme &s) {
    const Evaluator ev(p, s);
    std::vector<double> out(p.q.size(), 0.0);
    std::vector<double> row;
    for (int b = 0; b < p.batch; ++b)
        for (int h = 0; h < p.heads; ++h)
            for (int i = 0; i < p.q_len; ++i) {
                double *o = &out[q_off(p, b, h, i)];
                if (ev.probs_row(b, h, i, row)) ev.output_row(b, h, i, row, o);
                // else: fully masked row stays zero
            }
    return out;
}

// ---- RoPE / xPos transforms ---------------------------------------------------------------------

TransformedQK rope_apply(const Problem &p, const Rope &r) {
    validate_problem(p);
    const int D = p.head_dim;
    const int rot = r.rot_dim == 0 ? D : r.rot_dim;
    require(rot > 0 && rot <= D && rot % 2 == 0, "Rope: rot_dim must be even and in (0, head_dim]");
    const std::vector<double> inv_freq = r.inv_freq.empty() ? rope_inv_freq(rot, 10000.0) : r.inv_freq;
    require(inv_freq.size() == sz(rot / 2), "Rope: inv_freq must have rot_dim/2 entries");
    check_positions(r.q_positions, p, p.q_len, "Rope: q_positions");
    check_positions(r.k_positions, p, p.k_len, "Rope: k_positions");

    TransformedQK t{p.q, p.k};
    for (int b = 0; b < p.batch; ++b) {
        for (int h = 0; h < p.heads; ++h)
            for (int i = 0; i < p.q_len; ++i) {
                const double pos = position_or_default(r.q_positions, b, p.q_len, i, query_position(p, i));
                rotate(&t.q[q_off(p, b, h, i)], rot, r.pairing, inv_freq, pos, r.attention_factor);
            }
        for (int g = 0; g < p.kv_heads; ++g)
            for (int j = 0; j < p.k_len; ++j) {
                const double pos = position_or_default(r.k_positions, b, p.k_len, j, j);
                rotate(&t.k[kv_off(p, b, g, j)], rot, r.pairing, inv_freq, pos, r.attention_factor);
            }
    }
    return t;
}

TransformedQK xpos_apply(const Problem &p, const Xpos &x) {
    validate_problem(p);
    const int D = p.head_dim;
    require(D % 2 == 0, "Xpos: head_dim must be even");
    require(x.scale_base != 0, "Xpos: scale_base must be non-zero");
    check_positions(x.q_positions, p, p.q_len, "Xpos: q_positions");
    check_positions(x.k_positions, p, p.k_len, "Xpos: k_positions");
    // torchscale: min_pos = -N // 2 (Python floor division) with N = length + offset = k_len.
    const double centre = x.centre != 0 ? x.centre : std::floor(-static_cast<double>(p.k_len) / 2.0);
    const int half = D / 2;
    std::vector<double> theta(sz(half)), zeta(sz(half));
    for (int i = 0; i < half; ++i) {
        theta[sz(i)] = 1.0 / std::pow(10000.0, static_cast<double>(i) / half);
        zeta[sz(i)] = (2.0 * i + 0.4 * D) / (1.4 * D);
    }
    // One pair at a time: decay s_i(n) differs per pair, so rotate() is applied per pair.
    auto apply = [&](double *v, double n, bool downscale) {
        for (int i = 0; i < half; ++i) {
            double s = std::pow(zeta[sz(i)], (n + centre) / x.scale_base);
            if (downscale) s = 1.0 / s;
            const double angle = n * theta[sz(i)];
            const double cs = std::cos(angle) * s, sn = std::sin(angle) * s;
            const double a = v[2 * i], b = v[2 * i + 1];
            v[2 * i] = a * cs - b * sn;
            v[2 * i + 1] = b * cs + a * sn;
        }
    };
    TransformedQK t{p.q, p.k};
    for (int b = 0; b < p.batch; ++b) {
        for (int h = 0; h < p.heads; ++h)
            for (int i = 0; i < p.q_len; ++i)
                apply(&t.q[q_off(p, b, h, i)], position_or_default(x.q_positions, b, p.q_len, i, query_position(p, i)),
                      false);
        for (int g = 0; g < p.kv_heads; ++g)
            for (int j = 0; j < p.k_len; ++j)
                apply(&t.k[kv_off(p, b, g, j)], position_or_default(x.k_positions, b, p.k_len, j, j), true);
    }
    return t;
}

// ---- positional functions ---------------------------------------------------------------------

namespace {
std::vector<double> alibi_slopes_power_of_2(int n) {
    // start = 2**(-2**-(math.log2(n)-3)); ratio = start; [start*ratio**i for i in range(n)]
    const double start = std::pow(2.0, -std::pow(2.0, -(std::log2(static_cast<double>(n)) - 3.0)));
    const double ratio = start;
    std::vector<double> s(sz(n));
    for (int i = 0; i < n; ++i)
        s[sz(i)] = start * std::pow(ratio, static_cast<double>(i));
    return s;
}
}  // namespace

std::vector<double> alibi_slopes(int heads) {
    require(heads >= 1, "alibi_slopes: heads must be >= 1");
    const double lg = std::log2(static_cast<double>(heads));
    if (lg == std::floor(lg)) return alibi_slopes_power_of_2(heads);
    const int closest = 1 << static_cast<int>(std::floor(lg));
    std::vector<double> s = alibi_slopes_power_of_2(closest);
    const std::vector<double> extra = alibi_slopes(2 * closest);
    for (int m = 0; m < heads - closest; ++m)
        s.push_back(extra[sz(2 * m)]);  // [0::2][:n-c]
    return s;
}

int t5_bucket(int relative_position, bool bidirectional, int num_buckets, int max_distance) {
    long long rel = relative_position;
    long long buckets = 0;
    long long nb = num_buckets;
    if (bidirectional) {
        nb /= 2;
        if (rel > 0) buckets += nb;
        rel = rel < 0 ? -rel : rel;
    } else {
        rel = -std::min<long long>(rel, 0);
    }
    const long long max_exact = nb / 2;
    require(max_exact >= 1, "t5_bucket: num_buckets too small");
    require(max_distance > max_exact, "t5_bucket: max_distance must exceed max_exact");
    if (rel < max_exact) return static_cast<int>(buckets + rel);
    // torch: log(rel.float() / max_exact) / math.log(max_distance / max_exact) * (nb - max_exact),
    // all float32 (the Python double divisor is cast to float32), then .to(long) (truncation).
    const float ratio = static_cast<float>(rel) / static_cast<float>(max_exact);
    const float lg = std::log(ratio);
    const float denom =
        static_cast<float>(std::log(static_cast<double>(max_distance) / static_cast<double>(max_exact)));
    const float x = lg / denom * static_cast<float>(nb - max_exact);
    long long large = max_exact + static_cast<long long>(x);  // truncation toward zero
    large = std::min<long long>(large, nb - 1);
    return static_cast<int>(buckets + large);
}

int deberta_log_bucket(int relative_position, int bucket_size, int max_position) {
    const int mid = bucket_size / 2;
    require(mid >= 1, "deberta_log_bucket: bucket_size must be >= 2");
    require(max_position - 1 > mid, "deberta_log_bucket: max_position - 1 must exceed bucket_size/2");
    // make_log_bucket_position clamps to [-max_position+1, max_position-1] before the lookup.
    const int rel = std::clamp(relative_position, -(max_position - 1), max_position - 1);
    const int sign = rel > 0 ? 1 : (rel < 0 ? -1 : 0);
    const int abs_pos = rel < 0 ? -rel : rel;
    if (abs_pos <= mid) return rel;
    // float32 like the torch reference: (abs_pos / mid) is int64/int -> float32.
    const float ratio = static_cast<float>(abs_pos) / static_cast<float>(mid);
    const float denom = static_cast<float>(std::log(static_cast<double>(max_position - 1) / static_cast<double>(mid)));
    const float log_pos = std::ceil(std::log(ratio) / denom * static_cast<float>(mid - 1)) + static_cast<float>(mid);
    return sign * static_cast<int>(log_pos);
}

std::vector<double> rope_inv_freq(int rot_dim, double base) {
    require(rot_dim > 0 && rot_dim % 2 == 0, "rope_inv_freq: rot_dim must be even and > 0");
    require(base > 0, "rope_inv_freq: base must be > 0");
    std::vector<double> f(sz(rot_dim / 2));
    for (int c = 0; c < rot_dim / 2; ++c)
        f[sz(c)] = 1.0 / std::pow(base, static_cast<double>(2 * c) / rot_dim);
    return f;
}

std::vector<double> rope_inv_freq_linear(int rot_dim, double base, double factor) {
    require(factor != 0, "rope_inv_freq_linear: factor must be non-zero");
    std::vector<double> f = rope_inv_freq(rot_dim, base);
    for (double &x : f)
        x /= factor;
    return f;
}

std::vector<double> rope_inv_freq_dynamic_ntk(int rot_dim, double base, double factor, int max_position_embeddings,
                                              int seq_len) {
    require(max_position_embeddings > 0, "rope_inv_freq_dynamic_ntk: max_position_embeddings must be > 0");
    if (seq_len > max_position_embeddings) {
        require(rot_dim > 2, "rope_inv_freq_dynamic_ntk: rot_dim must be > 2");
        base = base * std::pow((factor * seq_len / max_position_embeddings) - (factor - 1),
                               static_cast<double>(rot_dim) / (rot_dim - 2));
    }
    return rope_inv_freq(rot_dim, base);
}

std::vector<double> rope_inv_freq_llama3(int rot_dim, double base, double factor, double low_freq_factor,
                                         double high_freq_factor, int original_max_position_embeddings) {
    require(high_freq_factor != low_freq_factor, "rope_inv_freq_llama3: high == low freq factor");
    const std::vector<double> inv_freq = rope_inv_freq(rot_dim, base);
    const double old_context_len = original_max_position_embeddings;
    const double low_freq_wavelen = old_context_len / low_freq_factor;
    const double high_freq_wavelen = old_context_len / high_freq_factor;
    std::vector<double> out(inv_freq.size());
    for (std::size_t c = 0; c < inv_freq.size(); ++c) {
        const double wavelen = 2 * kPi / inv_freq[c];
        // wavelen > low_freq_wavelen: divide by factor; wavelen < high_freq_wavelen: keep.
        double f = wavelen > low_freq_wavelen ? inv_freq[c] / factor : inv_freq[c];
        const bool medium = !(wavelen < high_freq_wavelen) && !(wavelen > low_freq_wavelen);
        if (medium) {
            const double smooth = (old_context_len / wavelen - low_freq_factor) / (high_freq_factor - low_freq_factor);
            f = (1 - smooth) * f / factor + smooth * f;
        }
        out[c] = f;
    }
    return out;
}

std::vector<double> rope_inv_freq_yarn(int rot_dim, double base, double factor, int original_max_position_embeddings,
                                       double beta_fast, double beta_slow, double *attention_factor_out) {
    require(rot_dim > 0 && rot_dim % 2 == 0, "rope_inv_freq_yarn: rot_dim must be even and > 0");
    require(factor > 0 && base > 1, "rope_inv_freq_yarn: need factor > 0 and base > 1");
    if (beta_fast == 0) beta_fast = 32;  // `config.rope_scaling.get("beta_fast") or 32`
    if (beta_slow == 0) beta_slow = 1;
    const int dim = rot_dim;
    const double mpe = original_max_position_embeddings;
    auto find_correction_dim = [&](double num_rotations) {
        return (dim * std::log(mpe / (num_rotations * 2 * kPi))) / (2 * std::log(base));
    };
    const double low = std::max(std::floor(find_correction_dim(beta_fast)), 0.0);
    double high = std::min(std::ceil(find_correction_dim(beta_slow)), static_cast<double>(dim - 1));
    if (low == high) high += 0.001;  // prevent singularity
    std::vector<double> out(sz(dim / 2));
    for (int c = 0; c < dim / 2; ++c) {
        const double pos_freq = std::pow(base, static_cast<double>(2 * c) / dim);
        const double extrapolation = 1.0 / pos_freq;
        const double interpolation = 1.0 / (factor * pos_freq);
        const double ramp = std::clamp((c - low) / (high - low), 0.0, 1.0);
        const double extrapolation_factor = 1 - ramp;
        out[sz(c)] = interpolation * (1 - extrapolation_factor) + extrapolation * extrapolation_factor;
    }
    if (attention_factor_out) *attention_factor_out = 0.1 * std::log(factor) + 1.0;
    return out;
}

int sinusoid_columns(SinusoidConvention conv, int channels) {
    require(channels >= 0, "sinusoid: channels must be >= 0");
    switch (conv) {
        case SinusoidConvention::PaperInterleaved:
            require(channels % 2 == 0, "sinusoid PaperInterleaved: odd channels (the reference raises)");
            return channels;
        case SinusoidConvention::Tensor2TensorConcat:
            return channels;
        case SinusoidConvention::TransformerXLConcat:
            return 2 * ((channels + 1) / 2);
    }
    fail("sinusoid: unknown convention");
}

std::vector<double> sinusoid_table(SinusoidConvention conv, int length, int channels) {
    require(length >= 0, "sinusoid: length must be >= 0");
    const int cols = sinusoid_columns(conv, channels);
    std::vector<double> t(sz(static_cast<long long>(length) * cols), 0.0);
    auto at = [&](int p, int c) -> double & { return t[sz(static_cast<long long>(p) * cols + c)]; };
    switch (conv) {
        case SinusoidConvention::PaperInterleaved: {
            // div_term = exp(arange(0, d, 2) * (-ln(10000)/d)); pe[:, 0::2] = sin, pe[:, 1::2] = cos
            const double k = -std::log(10000.0) / channels;
            for (int p = 0; p < length; ++p)
                for (int i = 0; i < channels / 2; ++i) {
                    const double w = std::exp(static_cast<double>(2 * i) * k);
                    at(p, 2 * i) = std::sin(p * w);
                    at(p, 2 * i + 1) = std::cos(p * w);
                }
            break;
        }
        case SinusoidConvention::Tensor2TensorConcat: {
            // get_timing_signal_1d(min_timescale=1, max_timescale=1e4, start_index=0)
            const int n = channels / 2;
            const double inc = std::log(1.0e4 / 1.0) / std::max(static_cast<double>(n) - 1.0, 1.0);
            for (int p = 0; p < length; ++p)
                for (int i = 0; i < n; ++i) {
                    const double r = 1.0 * std::exp(static_cast<double>(i) * -inc);
                    at(p, i) = std::sin(p * r);
                    at(p, n + i) = std::cos(p * r);
                }
            break;  // odd channels: the last column stays 0 (tf.pad)
        }
        case SinusoidConvention::TransformerXLConcat: {
            // inv_freq = 1 / 10000^(arange(0, d, 2)/d); cat([sin, cos])
            const int n = cols / 2;
            for (int p = 0; p < length; ++p)
                for (int i = 0; i < n; ++i) {
                    const double f = 1.0 / std::pow(10000.0, static_cast<double>(2 * i) / channels);
                    at(p, i) = std::sin(p * f);
                    at(p, n + i) = std::cos(p * f);
                }
            break;
        }
    }
    return t;
}

}  // namespace attngen::ref
