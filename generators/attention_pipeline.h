// Assembles the attention algorithm into one pipeline: the inputs every kernel takes, one variant
// per head-dim fast path (two where the schedule asks for a multi-head and a grouped-query copy) plus
// a generic one, and an output that selects among them. Which variant runs is decided by the
// schedule's specializations (schedules/), not here.
#pragma once

#include "attention_algorithm.h"

#include <Halide.h>

#include <functional>
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
    std::vector<AttentionStages> variants;  // per fixed head_dim one (or more: see HeadSharingSplit), then generic
    std::vector<int> head_dims;             // fixed head_dim of each variant; 0 = any
    Halide::Expr head_dim;                  // the runtime head_dim
    // heads != kv_heads (and, with a head block, the block divides the group: Blocking::head_block):
    // selects a variant's SharedKvHeads copy over its OneQueryHeadPerKvHead one.
    // Schedules specialize on this very Expr, so each branch computes one copy.
    Halide::Expr kv_heads_shared;
    // heads == kv_heads: selects a variant's MultiHead copy, where it has one (specialized on likewise).
    Halide::Expr multi_head;
};

// The copies of a fixed-head_dim variant a schedule wants beside the one of one query head per tile
// (HeadSharing): a schedule that places some stage differently for them, or blocks them differently.
struct HeadSharingCopies {
    bool shared_kv_heads = false;  // grouped queries in head blocks (Blocking::head_block)
    bool multi_head = false;       // heads == kv_heads (Blocking::multi_head_key_chunk)
    bool any() const { return shared_kv_heads || multi_head; }
};
// Asked of each fixed-head_dim variant (see schedules/). Null: one copy each.
using HeadSharingSplit = std::function<HeadSharingCopies(const AttentionStages &)>;

// `fast_head_dims`: head dims that get a variant with the dimension fixed at compile time.
// `generic`: also a variant for any head_dim (off for the build's fixed head_dim kernels and for
// single-shape experiments, e.g. the autoschedulers, which cannot use specializations).
AttentionPipeline define_attention_pipeline(const AttentionBindings &bindings, const std::string &scheme,
                                            const SchemeOptions &options, const Blocking &blocking,
                                            const std::vector<int> &fast_head_dims, bool generic = true,
                                            const HeadSharingSplit &split_head_sharing = nullptr);

}  // namespace attngen
