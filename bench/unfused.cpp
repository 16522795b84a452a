#include "unfused.h"

#include "thread_pool.h"
#include "vector_math.h"

#include <cblas.h>

#include <algorithm>
#include <cstring>
#include <limits>

namespace attngen_bench {

void HeadScratch::allocate(const Problem &p, bool own_scores) {
    const std::size_t Lq = std::size_t(p.Lq), Lk = std::size_t(p.Lk), D = std::size_t(p.D);
    const std::size_t span2 = 2 * kDebertaSpan, rows = 2 * kShawClip + 1;
    if (p.rotary() || p.config.scheme == SchemeId::Txl) q_scores.resize(Lq * D);
    if (p.config.scheme == SchemeId::Txl) q_position.resize(Lq * D);
    if (p.rotary()) k_scores.resize(Lk * D);
    if (own_scores) {
        scores.resize(Lq * Lk);
        if (p.has_positional_bias()) bias.resize(Lq * Lk);
    }
    switch (p.config.scheme) {
        case SchemeId::Alibi:
        case SchemeId::T5:
            delta_bias.resize(2 * Lk - 1);
            break;
        case SchemeId::Shaw:
            products.resize(Lq * rows);
            aggregated.resize(Lq * rows);
            break;
        case SchemeId::Txl:
            products.resize(Lq * Lk);
            break;
        case SchemeId::Deberta:
            products.resize(Lq * span2);
            products2.resize(Lk * span2);
            break;
        default:
            break;
    }
}

const float *query_for_scores(const Problem &p, int b, int h, HeadScratch &s) {
    const float *q = p.q_head(b, h);
    const int D = p.D, pairs = D / 2;
    if (p.rotary()) {
        for (int i = 0; i < p.Lq; i++)
            p.rotate_row(q + std::size_t(i) * D, &p.q_cos[std::size_t(i) * pairs], &p.q_sin[std::size_t(i) * pairs],
                         &s.q_scores[std::size_t(i) * D]);
        return s.q_scores.data();
    }
    if (p.config.scheme == SchemeId::Txl) {
        const float *u = &p.txl_u[std::size_t(h) * D];
        for (int i = 0; i < p.Lq; i++)
            for (int d = 0; d < D; d++)
                s.q_scores[std::size_t(i) * D + d] = q[std::size_t(i) * D + d] + u[d];
        return s.q_scores.data();
    }
    return q;
}

const float *key_for_scores(const Problem &p, int b, int kvh, HeadScratch &s) {
    const float *k = p.k_head(b, kvh);
    if (!p.rotary()) return k;
    const int D = p.D, pairs = D / 2;
    for (int j = 0; j < p.Lk; j++)
        p.rotate_row(k + std::size_t(j) * D, &p.k_cos[std::size_t(j) * pairs], &p.k_sin[std::size_t(j) * pairs],
                     &s.k_scores[std::size_t(j) * D]);
    return s.k_scores.data();
}

void materialize_bias(const Problem &p, int b, int h, float *bias, int ld, bool mask_as_bias, HeadScratch &s) {
    const int Lq = p.Lq, Lk = p.Lk, D = p.D;
    const float scale = p.scale;
    const float *q = p.q_head(b, h);
    switch (p.config.scheme) {
        case SchemeId::Alibi:
        case SchemeId::T5: {
            // One bias per distance delta = j - p_i; row i of the bias is the slice starting at delta = -p_i.
            float *per_delta = s.delta_bias.data();
            for (int delta = -(Lk - 1); delta <= Lk - 1; delta++) {
                float value;
                if (p.config.scheme == SchemeId::Alibi) {
                    const int distance = p.alibi_symmetric ? std::abs(delta) : -delta;
                    value = -p.alibi_slopes[std::size_t(h)] * float(distance);
                } else {
                    value = p.t5_table[std::size_t(p.t5_bucket(delta)) * p.H + h];
                }
                per_delta[delta + Lk - 1] = value;
            }
            for (int i = 0; i < Lq; i++)
                std::memcpy(bias + std::size_t(i) * ld, per_delta + (Lk - 1 - p.query_position(i)),
                            sizeof(float) * std::size_t(Lk));
            break;
        }
        case SchemeId::Shaw: {
            // q . aK for every table row, then gathered by clip(j - p_i, -K, K) + K.
            const int rows = 2 * kShawClip + 1;
            float *qa = s.products.data();
            cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, Lq, rows, D, scale, q, D, p.shaw_keys.data(), D, 0.f,
                        qa, rows);
            for (int i = 0; i < Lq; i++) {
                const int pi = p.query_position(i);
                const float *src = qa + std::size_t(i) * rows;
                float *dst = bias + std::size_t(i) * ld;
                for (int j = 0; j < Lk; j++)
                    dst[j] = src[p.shaw_row(j - pi)];
            }
            break;
        }
        case SchemeId::Txl: {
            // (q + v) . R for every R row, then the rel-shift: bias[i][j] = prod[i][Lk - 1 - (p_i - j)],
            // future keys clamped to the last row.
            float *prod = s.products.data(), *q_plus_v = s.q_position.data();
            const float *v = &p.txl_v[std::size_t(h) * D];
            for (int i = 0; i < Lq; i++)
                for (int d = 0; d < D; d++)
                    q_plus_v[std::size_t(i) * D + d] = q[std::size_t(i) * D + d] + v[d];
            cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, Lq, Lk, D, scale, q_plus_v, D,
                        &p.txl_r[std::size_t(h) * Lk * D], D, 0.f, prod, Lk);
            for (int i = 0; i < Lq; i++) {
                const int pi = p.query_position(i);
                const float *src = prod + std::size_t(i) * Lk;
                float *dst = bias + std::size_t(i) * ld;
                const int first = Lk - 1 - pi;  // R row of key 0
                const int last_visible = std::min(pi, Lk - 1);
                for (int j = 0; j <= last_visible; j++)
                    dst[j] = src[first + j];
                for (int j = last_visible + 1; j < Lk; j++)
                    dst[j] = src[Lk - 1];
            }
            break;
        }
        case SchemeId::Deberta: {
            // c2p = q Kr^T [Lq, 2span], p2c = k Qr^T [Lk, 2span], gathered by the bucketed row of p_i - j.
            const int span2 = 2 * kDebertaSpan;
            const int kvh = h / p.group;
            float *c2p = s.products.data(), *p2c = s.products2.data();
            const float *pos_key = &p.deberta_pos_key[std::size_t(h) * span2 * D];
            const float *pos_query = &p.deberta_pos_query[std::size_t(h) * span2 * D];
            cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, Lq, span2, D, scale, q, D, pos_key, D, 0.f, c2p,
                        span2);
            cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, Lk, span2, D, scale, p.k_head(b, kvh), D, pos_query, D,
                        0.f, p2c, span2);
            for (int i = 0; i < Lq; i++) {
                const int pi = p.query_position(i);
                const float *c = c2p + std::size_t(i) * span2;
                float *dst = bias + std::size_t(i) * ld;
                for (int j = 0; j < Lk; j++) {
                    const int row = p.deberta_row(j - pi);
                    dst[j] = c[row] + p2c[std::size_t(j) * span2 + row];
                }
            }
            break;
        }
        default:
            for (int i = 0; i < Lq; i++)
                std::fill(bias + std::size_t(i) * ld, bias + std::size_t(i) * ld + Lk, 0.f);
            break;
    }
    if (mask_as_bias && p.config.causal) {
        for (int i = 0; i < Lq; i++) {
            float *row = bias + std::size_t(i) * ld;
            std::fill(row + p.visible_keys(i), row + Lk, -std::numeric_limits<float>::infinity());
        }
    }
}

void shaw_value_term(const Problem &p, const float *probs, int ld, float *out, HeadScratch &s) {
    const int K = kShawClip, rows = 2 * K + 1, Lk = p.Lk;
    float *agg = s.aggregated.data();
    for (int i = 0; i < p.Lq; i++) {
        const int pi = p.query_position(i);
        const float *P = probs + std::size_t(i) * ld;
        float *a = agg + std::size_t(i) * rows;
        std::fill(a, a + rows, 0.f);
        // delta = j - p_i <= -K: row 0; >= K: row 2K; in between one key per row.
        const int low_end = std::min(pi - K, Lk - 1);
        if (low_end >= 0) a[0] = sum_range(P, low_end + 1);
        const int high_start = std::max(pi + K, 0);
        if (high_start <= Lk - 1) a[rows - 1] = sum_range(P + high_start, Lk - high_start);
        for (int r = 1; r < rows - 1; r++) {
            const int j = pi + r - K;
            if (j >= 0 && j < Lk) a[r] = P[j];
        }
    }
    cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, p.Lq, p.D, rows, 1.f, agg, rows, p.shaw_values.data(), p.D,
                1.f, out, p.D);
}

OpenblasAttention::OpenblasAttention(const Problem &p) : p_(p), scratch_(std::size_t(baseline_pool().size())) {
    for (HeadScratch &s : scratch_)
        s.allocate(p, true);
}

void OpenblasAttention::run(float *out) {
    const Problem &p = p_;
    baseline_pool().run(p.B * p.H, [&](int task, int worker) {
        HeadScratch &s = scratch_[std::size_t(worker)];
        const int b = task / p.H, h = task % p.H, kvh = h / p.group;
        const int Lq = p.Lq, Lk = p.Lk, D = p.D;
        const float *q = query_for_scores(p, b, h, s);
        const float *k = key_for_scores(p, b, kvh, s);
        float *S = s.scores.data();
        cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, Lq, Lk, D, p.scale, q, D, k, D, 0.f, S, Lk);
        if (p.has_positional_bias()) {
            materialize_bias(p, b, h, s.bias.data(), Lk, false, s);
            add_inplace(S, s.bias.data(), std::size_t(Lq) * Lk);
        }
        for (int i = 0; i < Lq; i++)
            softmax_row(S + std::size_t(i) * Lk, p.visible_keys(i), Lk);
        float *o = out + (std::size_t(b) * p.H + h) * Lq * D;
        cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, Lq, D, Lk, 1.f, S, Lk, p.v_head(b, kvh), D, 0.f, o, D);
        if (p.config.scheme == SchemeId::Shaw) shaw_value_term(p, S, Lk, o, s);
    });
}

std::string OpenblasAttention::label() const {
    return "OpenBLAS " + std::string(openblas_get_config()) + ", 1 thread per head, " +
           std::to_string(baseline_pool().size()) + " std::threads over heads";
}

}  // namespace attngen_bench
