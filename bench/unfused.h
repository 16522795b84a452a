// attngen-bench: the unfused baselines' shared pieces (per-head query/key transforms, the dense
// positional bias of a head, Shaw's value term), and the OpenBLAS baseline built from them.
//
// Unfused means: the full Lq x Lk score matrix of a head is computed (sgemm), the positional term is
// materialized as a dense [Lq, Lk] bias and added, the row softmax runs over the visible keys (masked
// entries are computed, then skipped / zeroed), and P V is another sgemm.
#pragma once

#include "bench_problem.h"

#include <string>
#include <vector>

namespace attngen_bench {

// Scratch of one worker for one head.
struct HeadScratch {
    std::vector<float> q_scores;    // [Lq, D] transformed query (rotated; TXL q + u)
    std::vector<float> q_position;  // [Lq, D] TXL q + v
    std::vector<float> k_scores;    // [Lk, D] rotated keys
    std::vector<float> scores;      // [Lq, Lk] (OpenBLAS path)
    std::vector<float> bias;        // [Lq, Lk] (OpenBLAS path)
    std::vector<float> products;    // Shaw [Lq, 2K+1]; TXL [Lq, Lk]; DeBERTa c2p [Lq, 2span]
    std::vector<float> products2;   // DeBERTa p2c [Lk, 2span]
    std::vector<float> delta_bias;  // ALiBi / T5: the bias of each distance j - p_i, [2 Lk - 1]
    std::vector<float> aggregated;  // Shaw: probabilities summed per clipped distance [Lq, 2K+1]
    // Sizes every buffer this problem needs (scores/bias only when own_scores).
    void allocate(const Problem &p, bool own_scores);
};

// The query of head (b, h) as it meets the keys: rotated (RoPE / xPos), plus u (TXL), or q itself
// (then no copy is made).
const float *query_for_scores(const Problem &p, int b, int h, HeadScratch &s);
// The keys of kv head (b, kvh) as they meet the queries: rotated (RoPE / xPos) or k itself.
const float *key_for_scores(const Problem &p, int b, int kvh, HeadScratch &s);
// The positional term of head (b, h) as a dense bias [Lq, Lk] (row stride ld) added to scale * q.k:
// ALiBi and T5 biases, scale * q.aK[clip] (Shaw), scale * (q+v).R[rel-shift] (TXL),
// scale * (c2p + p2c) (DeBERTa), 0 for the other schemes. With mask_as_bias, causally masked entries
// are -inf. The content-position products are cblas_sgemm calls (single-threaded OpenBLAS).
void materialize_bias(const Problem &p, int b, int h, float *bias, int ld, bool mask_as_bias, HeadScratch &s);
// Shaw's value term of head h: out[Lq, D] += (P aggregated per clipped distance) [Lq, 2K+1] x aV.
void shaw_value_term(const Problem &p, const float *probs, int ld, float *out, HeadScratch &s);

// The OpenBLAS baseline: heads in parallel over the baseline pool (2 std::threads), each head
// single-threaded OpenBLAS (openblas_set_num_threads(1) is set by main).
class OpenblasAttention {
public:
    explicit OpenblasAttention(const Problem &p);
    void run(float *out);
    std::string label() const;

private:
    const Problem &p_;
    std::vector<HeadScratch> scratch_;
};

}  // namespace attngen_bench
