// attngen-bench: the oneDNN baseline. Heads are processed in groups of G (flattened batch x head,
// G chosen so the group's score matrix stays within a memory budget): batched matmul primitives for
// S = scale Q K^T (+ the dense positional bias / causal mask through a binary-add post-op) and O = P V,
// a softmax primitive in between. The per-head transforms, bias materialization and Shaw's value term
// are the OpenBLAS baseline's code (unfused.h), run on the same 2-thread pool. oneDNN's own threads
// are its OpenMP runtime's (Debian's libdnnl uses libgomp; default: one per core).
#pragma once

#include "bench_problem.h"
#include "unfused.h"

#include <memory>
#include <string>

namespace attngen_bench {

class OnednnAttention {
public:
    explicit OnednnAttention(const Problem &p);
    ~OnednnAttention();
    void run(float *out);
    std::string label() const;

private:
    struct Impl;
    std::unique_ptr<Impl> impl_;
};

}  // namespace attngen_bench
