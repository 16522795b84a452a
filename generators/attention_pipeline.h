// Assembles the attention algorithm into one pipeline: the inputs every kernel takes, one variant
// per head-dim fast path plus a generic one, and an output that selects among them. Which variant
// runs is decided by the schedule's specializations (schedules/), not here.
#pragma once

#include "attention_algorithm.h"

#include <Halide.h>

#include <string>
#include <vector>

namespace attngen {

// Inputs every attention kernel takes, in call order, before the scheme's own.
struct AttentionBindings {
    Halide::ImageParam q, k, v;  // [B,H,Lq,D], [B,Hkv,Lk,D] (Halide: (d, i, h, b))
    Halide::ImageParam kv_len;   // [B] int32
    Halide::Expr scale, mask_kind, window;
    BoundInputs scheme_inputs;
};

// Core inputs, documented the same way as scheme inputs (the runtime validates against these).
std::vector<InputSpec> attention_core_inputs();

struct AttentionPipeline {
    Halide::Func output;                    // (d, i, h, b)
    std::vector<AttentionStages> variants;  // one per entry of head_dims
    std::vector<int> head_dims;             // fixed head_dim of each variant; 0 = any
    Halide::Expr head_dim;                  // the runtime head_dim
};

// `fast_head_dims`: head dims that get a variant with the dimension fixed at compile time.
// `generic`: also a variant for any head_dim (off only for single-shape experiments, e.g. the
// autoschedulers, which cannot use specializations).
AttentionPipeline define_attention_pipeline(const AttentionBindings &bindings, const std::string &scheme,
                                            const SchemeOptions &options, const Blocking &blocking,
                                            const std::vector<int> &fast_head_dims, bool generic = true);

}  // namespace attngen
