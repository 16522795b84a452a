// Schedules of the standalone positional kernels (generators/positional_generators.cpp).
#pragma once

#include <Halide.h>

#include <vector>

namespace attngen {

// Dense, zero-based input and an output of the same extents.
template <typename In, typename Out>
void constrain_like_input(In &input, Out &output) {
    input.dim(0).set_min(0).set_stride(1);
    output.dim(0).set_min(0).set_stride(1).set_extent(input.dim(0).extent());
    for (int dim = 1; dim < input.dimensions(); dim++) {
        input.dim(dim).set_min(0);
        output.dim(dim).set_min(0).set_extent(input.dim(dim).extent());
    }
}

// A per-call (x, position, batch) table (RoPE / xPos cos and sin) computed at root, in parallel over
// blocks of positions fused with the batch: a call with one sequence still fills the threads.
void schedule_position_table(Halide::Func table);
// out(d, n, h, b) from a per-(frequency, n, b) (cos, sin) table, itself from per-frequency values: tables
// once per call, rotation vectorized over d, parallel over rows.
void schedule_rotation(Halide::Func out, Halide::Func cos_sin, const std::vector<Halide::Func> &per_frequency,
                       const Halide::Target &target);
// out(c, p): vectorized over c, parallel over p.
void schedule_table(Halide::Func out, const Halide::Target &target);
// out(c, n, b): vectorized over c, parallel over rows.
void schedule_embedding(Halide::Func out, const Halide::Target &target);

}  // namespace attngen
