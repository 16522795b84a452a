// attngen example: what an application does with the generated kernel library. It links
// attngen::attngen, describes each call with a descriptor, and checks the results against a naive
// reference written out below, reporting what ran and how fast.
#include <attngen/attngen.hpp>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <random>
#include <string>
#include <vector>

namespace {

struct Problem {
    const char *label;
    attngen_scheme scheme;
    attngen_mask mask;
    int64_t batch, heads, kv_heads, q_len, k_len, head_dim;
    // RoPE: k is a decoder's KV cache of keys rotated once when they were appended
    // (attngen_rope); each call rotates only the queries (desc.keys_rotated).
    bool rotated_key_cache = false;
};

double seconds_since(std::chrono::steady_clock::time_point start) {
    return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}

// RoPE (Llama rotate_half, base 10000) of one row at `position`, as the naive reference applies it.
void rotate_half(float *row, int64_t head_dim, int64_t position) {
    const int64_t half = head_dim / 2;
    for (int64_t c = 0; c < half; c++) {
        const double angle = double(position) * std::pow(10000.0, -2.0 * double(c) / double(head_dim));
        const double x = row[c], y = row[c + half];
        row[c] = float(x * std::cos(angle) - y * std::sin(angle));
        row[c + half] = float(y * std::cos(angle) + x * std::sin(angle));
    }
}

// The textbook computation, one query row at a time, in double precision.
std::vector<float> naive_attention(const Problem &p, std::vector<float> q, std::vector<float> k,
                                   const std::vector<float> &v) {
    const int64_t group = p.heads / p.kv_heads;
    if (p.scheme == ATTNGEN_SCHEME_ROPE) {
        for (int64_t row = 0; row < p.batch * p.heads * p.q_len; row++) {
            rotate_half(&q[row * p.head_dim], p.head_dim, p.k_len - p.q_len + row % p.q_len);
        }
        for (int64_t row = 0; row < p.batch * p.kv_heads * p.k_len; row++) {
            rotate_half(&k[row * p.head_dim], p.head_dim, row % p.k_len);
        }
    }
    std::vector<double> slopes(p.heads);
    for (int64_t h = 0; h < p.heads; h++)
        slopes[h] = std::pow(2.0, -8.0 * double(h + 1) / double(p.heads));
    std::vector<float> out(q.size(), 0.f);
    std::vector<double> scores(p.k_len);
    const double scale = 1.0 / std::sqrt(double(p.head_dim));
    for (int64_t b = 0; b < p.batch; b++) {
        for (int64_t h = 0; h < p.heads; h++) {
            const int64_t g = h / group;
            for (int64_t i = 0; i < p.q_len; i++) {
                const int64_t position = p.k_len - p.q_len + i;
                const float *qi = &q[((b * p.heads + h) * p.q_len + i) * p.head_dim];
                double row_max = -1e300;
                int64_t visible = p.mask == ATTNGEN_MASK_CAUSAL ? std::min(position + 1, p.k_len) : p.k_len;
                for (int64_t j = 0; j < visible; j++) {
                    const float *kj = &k[((b * p.kv_heads + g) * p.k_len + j) * p.head_dim];
                    double dot = 0;
                    for (int64_t d = 0; d < p.head_dim; d++)
                        dot += double(qi[d]) * kj[d];
                    scores[j] =
                        dot * scale - (p.scheme == ATTNGEN_SCHEME_ALIBI ? slopes[h] * double(position - j) : 0.0);
                    row_max = std::max(row_max, scores[j]);
                }
                double sum = 0;
                for (int64_t j = 0; j < visible; j++)
                    sum += scores[j] = std::exp(scores[j] - row_max);
                float *oi = &out[((b * p.heads + h) * p.q_len + i) * p.head_dim];
                for (int64_t d = 0; d < p.head_dim && visible > 0; d++) {
                    double acc = 0;
                    for (int64_t j = 0; j < visible; j++)
                        acc += scores[j] * v[((b * p.kv_heads + g) * p.k_len + j) * p.head_dim + d];
                    oi[d] = float(acc / sum);
                }
            }
        }
    }
    return out;
}

}  // namespace

int main() {
    const Problem problems[] = {
        {"causal prefill", ATTNGEN_SCHEME_SDPA, ATTNGEN_MASK_CAUSAL, 1, 8, 8, 512, 512, 64},
        {"prefill, GQA 4:1", ATTNGEN_SCHEME_SDPA, ATTNGEN_MASK_NONE, 1, 16, 4, 512, 512, 128},
        {"decode, GQA 4:1", ATTNGEN_SCHEME_SDPA, ATTNGEN_MASK_CAUSAL, 1, 32, 8, 1, 4096, 128},
        {"ALiBi causal prefill", ATTNGEN_SCHEME_ALIBI, ATTNGEN_MASK_CAUSAL, 1, 8, 8, 512, 512, 64},
        {"RoPE causal prefill", ATTNGEN_SCHEME_ROPE, ATTNGEN_MASK_CAUSAL, 1, 8, 8, 512, 512, 64},
        {"RoPE decode, key cache", ATTNGEN_SCHEME_ROPE, ATTNGEN_MASK_CAUSAL, 1, 32, 8, 1, 4096, 128, true},
    };
    std::printf("attngen example: fused attention from the generated kernel library vs a naive reference\n\n");
    std::mt19937 rng(7);
    std::normal_distribution<float> normal;
    bool all_ok = true;
    for (const Problem &p : problems) {
        std::vector<float> q(p.batch * p.heads * p.q_len * p.head_dim), k(p.batch * p.kv_heads * p.k_len * p.head_dim),
            v(k.size()), out(q.size());
        for (auto *data : {&q, &k, &v}) {
            for (float &x : *data)
                x = normal(rng);
        }
        attngen::AttentionDesc desc = attngen::attention_desc(p.scheme, p.mask);
        attngen::RunInfo info{};
        const auto qt = attngen::tensor(q.data(), {p.batch, p.heads, p.q_len, p.head_dim});
        // The caches in attngen_alloc memory (cache-line aligned, huge pages from 2 MiB): decode streams them.
        std::vector<float, attngen::Allocator<float>> key_cache(k.begin(), k.end()), value_cache(v.begin(), v.end());
        const auto kt = attngen::tensor(key_cache.data(), {p.batch, p.kv_heads, p.k_len, p.head_dim});
        if (p.rotated_key_cache) {
            // Keys at positions 0 .. k_len-1, rotated in place once; a decoder does this per appended key.
            char error[256] = "";
            if (attngen_rope(&kt, nullptr, &desc.rope, int32_t(p.k_len), &kt, error, sizeof error) != ATTNGEN_OK) {
                std::printf("%s: error: %s\n", p.label, error);
                return 1;
            }
            desc.keys_rotated = 1;
        }
        const auto vt = attngen::tensor(value_cache.data(), {p.batch, p.kv_heads, p.k_len, p.head_dim});
        const auto ot = attngen::tensor(out.data(), {p.batch, p.heads, p.q_len, p.head_dim});
        attngen::Status status = attngen::attention(qt, kt, vt, ot, desc, &info);  // warm-up
        if (!status) {
            std::printf("%s: error: %s\n", p.label, status.message.c_str());
            return 1;
        }
        double best = 1e30;
        for (int rep = 0; rep < 10; rep++) {
            auto start = std::chrono::steady_clock::now();
            attngen::attention(qt, kt, vt, ot, desc, &info);
            best = std::min(best, seconds_since(start));
        }
        auto start = std::chrono::steady_clock::now();
        std::vector<float> expected = naive_attention(p, q, k, v);
        const double naive = seconds_since(start);
        double max_error = 0;
        for (size_t n = 0; n < out.size(); n++)
            max_error = std::max(max_error, double(std::fabs(out[n] - expected[n])));
        // FLOP count 4 B H Lq Lk D, halved for causal (the masked half is skipped).
        double flops = 4.0 * p.batch * p.heads * p.q_len * p.k_len * p.head_dim;
        if (p.mask == ATTNGEN_MASK_CAUSAL && p.q_len > 1) flops /= 2;
        const bool ok = max_error < 1e-4;
        all_ok = all_ok && ok;
        std::printf("%-22s (B,H,Hkv,Lq,Lk,D)=(%lld,%lld,%lld,%lld,%lld,%lld)\n", p.label, (long long)p.batch,
                    (long long)p.heads, (long long)p.kv_heads, (long long)p.q_len, (long long)p.k_len,
                    (long long)p.head_dim);
        std::printf("  attngen  %9.3f ms %8.1f GFLOP/s  kernel %s on %s%s%s\n", best * 1e3, flops / best * 1e-9,
                    info.kernel, info.device, info.cpu_target[0] ? ", variant " : "", info.cpu_target);
        std::printf("  naive    %9.3f ms %8.2f GFLOP/s  (double, one thread)\n", naive * 1e3, flops / naive * 1e-9);
        std::printf("  speedup %.0fx, max abs error %.2g %s\n\n", naive / best, max_error, ok ? "(ok)" : "(TOO LARGE)");
    }
    std::printf("%s\n",
                all_ok ? "all results match the naive reference (atol 1e-4)" : "MISMATCH against the reference");
    return all_ok ? 0 : 1;
}
