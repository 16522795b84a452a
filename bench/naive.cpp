#include "naive.h"

#include <vector>

namespace attngen_bench {

void naive_attention(const Problem &p, float *out) {
    const int D = p.D;
    std::vector<float> q_rot, k_rot;
    if (p.rotary()) {
        q_rot.resize(p.q_size());
        k_rot.resize(p.kv_size());
        for (std::size_t bh = 0; bh < std::size_t(p.B) * p.H; bh++)
            for (int i = 0; i < p.Lq; i++) {
                const std::size_t row = bh * p.Lq + i;
                p.rotate_row(p.q.data() + row * D, &p.q_cos[std::size_t(i) * (D / 2)],
                             &p.q_sin[std::size_t(i) * (D / 2)], q_rot.data() + row * D);
            }
        for (std::size_t bh = 0; bh < std::size_t(p.B) * p.Hkv; bh++)
            for (int j = 0; j < p.Lk; j++) {
                const std::size_t row = bh * p.Lk + j;
                p.rotate_row(p.k.data() + row * D, &p.k_cos[std::size_t(j) * (D / 2)],
                             &p.k_sin[std::size_t(j) * (D / 2)], k_rot.data() + row * D);
            }
    }
    const float *q = p.rotary() ? q_rot.data() : p.q.data();
    const float *k = p.rotary() ? k_rot.data() : p.k.data();
    std::vector<float> scores(static_cast<std::size_t>(p.Lk));
    std::vector<float> q_plus_u(static_cast<std::size_t>(D)), q_plus_v(static_cast<std::size_t>(D));
    for (int b = 0; b < p.B; b++)
        for (int h = 0; h < p.H; h++) {
            const int kvh = h / p.group;
            const std::size_t kv_offset = (std::size_t(b) * p.Hkv + kvh) * p.Lk * D;
            for (int i = 0; i < p.Lq; i++) {
                const std::size_t row = (std::size_t(b) * p.H + h) * p.Lq + i;
                RowInputs<float> in;
                in.q_content = q + row * D;
                in.q_position = p.q.data() + row * D;
                in.k = k + kv_offset;
                in.v = p.v.data() + kv_offset;
                if (p.config.scheme == SchemeId::Txl) {
                    for (int d = 0; d < D; d++) {
                        q_plus_u[std::size_t(d)] = in.q_content[d] + p.txl_u[std::size_t(h) * D + d];
                        q_plus_v[std::size_t(d)] = in.q_content[d] + p.txl_v[std::size_t(h) * D + d];
                    }
                    in.q_content = q_plus_u.data();
                    in.q_position = q_plus_v.data();
                }
                attention_row(p, h, i, in, scores.data(), out + row * D);
            }
        }
}

}  // namespace attngen_bench
