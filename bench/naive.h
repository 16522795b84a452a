// attngen-bench: the straightforward attention, one query row at a time, written from the contract
// (shared/conformance/README.md) without any of the unfused baselines' code. T = float is the timed
// naive baseline; T = double gives the reference rows every implementation is validated against.
#pragma once

#include "bench_problem.h"

#include <cmath>
#include <limits>

namespace attngen_bench {

// Inputs of one query row (b, h, i).
template <typename T>
struct RowInputs {
    const T *q_content = nullptr;   // [D] the query as it meets the keys (rotated; TXL: q + u)
    const T *q_position = nullptr;  // [D] the query of the content-position term (raw q; TXL: q + v)
    const T *k = nullptr;           // [Lk, D] keys of the row's kv head (rotated for RoPE / xPos)
    const float *v = nullptr;       // [Lk, D]
};

// sum_d a[d] * b[d], accumulated in T in channel order.
template <typename T, typename U>
T dot(const T *a, const U *b, int D) {
    T sum = 0;
    for (int d = 0; d < D; d++)
        sum += a[d] * T(b[d]);
    return sum;
}

// out[D] = attention of row (b, h, i); scores is scratch of Lk elements.
template <typename T>
void attention_row(const Problem &p, int h, int i, const RowInputs<T> &in, T *scores, T *out) {
    const int D = p.D, n = p.visible_keys(i), pi = p.query_position(i);
    const T scale = T(p.scale);
    const int span2 = 2 * kDebertaSpan;
    T m = std::numeric_limits<T>::lowest();
    for (int j = 0; j < n; j++) {
        const T *kj = in.k + std::size_t(j) * D;
        T s = scale * dot(in.q_content, kj, D);
        const int delta = j - pi;
        switch (p.config.scheme) {
            case SchemeId::Alibi: {
                int distance = pi - j;
                if (p.alibi_symmetric && distance < 0) distance = -distance;
                s += -T(p.alibi_slopes[std::size_t(h)]) * T(distance);
                break;
            }
            case SchemeId::T5:
                s += T(p.t5_table[std::size_t(p.t5_bucket(delta)) * p.H + h]);
                break;
            case SchemeId::Shaw: {
                const float *a = p.shaw_keys.data() + std::size_t(p.shaw_row(delta)) * D;
                s += scale * dot(in.q_position, a, D);
                break;
            }
            case SchemeId::Txl: {
                const float *r = p.txl_r.data() + (std::size_t(h) * p.Lk + p.txl_row(delta)) * D;
                s += scale * dot(in.q_position, r, D);
                break;
            }
            case SchemeId::Deberta: {
                const std::size_t row = std::size_t(h) * span2 + std::size_t(p.deberta_row(delta));
                const float *kr = p.deberta_pos_key.data() + row * D;
                const float *qr = p.deberta_pos_query.data() + row * D;
                s += scale * (dot(in.q_position, kr, D) + dot(kj, qr, D));
                break;
            }
            default:
                break;
        }
        scores[j] = s;
        if (s > m) m = s;
    }
    for (int d = 0; d < D; d++)
        out[d] = 0;
    T sum = 0;
    for (int j = 0; j < n; j++) {
        const T w = std::exp(scores[j] - m);
        sum += w;
        const float *vj = in.v + std::size_t(j) * D;
        for (int d = 0; d < D; d++)
            out[d] += w * T(vj[d]);
        if (p.config.scheme == SchemeId::Shaw && !p.shaw_values.empty()) {
            const float *a = p.shaw_values.data() + std::size_t(p.shaw_row(j - pi)) * D;
            for (int d = 0; d < D; d++)
                out[d] += w * T(a[d]);
        }
    }
    const T inv = n > 0 ? T(1) / sum : T(0);
    for (int d = 0; d < D; d++)
        out[d] *= inv;
}

// The naive baseline: every row of the problem with attention_row<float>, one thread. RoPE / xPos
// rotate q and k first (part of the timed work), TXL forms q + u and q + v per row.
void naive_attention(const Problem &p, float *out);

}  // namespace attngen_bench
