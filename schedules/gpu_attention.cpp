// GPU schedule (CUDA, OpenCL). One block per (key chunk, query tile, head x batch): K and V tiles of
// the chunk are staged in shared memory, scores and probabilities of the block live in shared
// memory, each thread owns (row, channel) entries of the block's partial softmax state, written to
// global memory. A second kernel (one block per (query tile, head x batch)) merges the partial
// states: flash-decoding split-K, for prefill and decode alike.
#include "attention_schedule.h"

namespace attngen {

using namespace Halide;

GpuScheduleParams default_gpu_params(ShapeClass shape) {
    GpuScheduleParams params;
    // Both shape classes use the two-pass merge: partial states per (query tile, key chunk) block
    // in global memory, merged by a second kernel. The online form (state in shared memory across
    // the block's serial chunk loop) compiles but computes wrong row sums on Halide 14 + PoCL (see
    // README, Known limits); it stays selectable with merge=online for investigation.
    if (shape == ShapeClass::Prefill) {
        params.blocking = {8, 32, Merge::TwoPass};
    } else {
        params.blocking = {1, 64, Merge::TwoPass};
    }
    return params;
}

namespace {

const TailStrategy kGuard = TailStrategy::GuardWithIf;

// Threads over (first, second) arguments of a stage; the first is split so that at most
// `lanes` threads run along it (the rest of it runs serially inside each thread).
void threads_over(Stage stage, const VarOrRVar &first, const VarOrRVar &second, int lanes, const std::string &tag) {
    Var outer(tag + "_outer"), inner(tag + "_lane");
    stage.split(first, outer, inner, lanes, kGuard).reorder(outer, inner, second).gpu_threads(inner, second);
}

// A Func computed inside a block, in shared memory, threads over its first two arguments.
void block_local(Func f, const LoopLevel &at, int lanes) {
    std::vector<Var> args = f.args();
    f.compute_at(at);
    if (args.size() >= 2) {
        threads_over(f, args[0], args[1], lanes, f.name() + "_t");
    } else {
        f.gpu_threads(args[0]);
    }
    for (int u = 0; u < f.num_update_definitions(); u++) {
        if (args.size() >= 2) {
            threads_over(f.update(u), args[0], args[1], lanes, f.name() + "_u" + std::to_string(u));
        } else {
            f.update(u).gpu_threads(args[0]);
        }
    }
}

// A Func computed once per call as its own kernel: 2D tiles of threads over its first two args.
void own_kernel(Func f) {
    std::vector<Var> args = f.args();
    f.compute_root();
    if (args.empty()) return;  // a per-call scalar, computed on the host
    Var xo("xo"), xi("xi"), yo("yo"), yi("yi");
    if (args.size() >= 2) {
        f.gpu_tile(args[0], args[1], xo, yo, xi, yi, 16, 8, kGuard);
    } else {
        f.gpu_tile(args[0], xo, xi, 64, kGuard);
    }
    for (int u = 0; u < f.num_update_definitions(); u++) {
        // Reductions run serially inside each thread.
        if (args.size() >= 2) {
            f.update(u).gpu_tile(args[0], args[1], xo, yo, xi, yi, 16, 8, kGuard);
        } else {
            f.update(u).gpu_tile(args[0], xo, xi, 64, kGuard);
        }
    }
}

void schedule_helpers(AttentionStages &s, const LoopLevel &chunk_level, int lanes) {
    for (HelperStage &helper : s.helpers) {
        // A contraction's copy stays inline; its product is the stage (operands inline).
        Func f = helper.is_contraction ? helper.product : helper.func;
        if (helper.placement == Placement::PerCall) {
            own_kernel(f);
        } else {
            // Per-tile rows are recomputed per chunk: shared memory holds only what a chunk needs.
            block_local(f, chunk_level, lanes);
        }
    }
    if (s.transforms_key) own_kernel(s.key);
}

// The stages of one (tile, chunk) block, computed at `chunk_level` in shared memory.
void schedule_chunk(AttentionStages &s, const LoopLevel &chunk_level, const GpuScheduleParams &p, bool stage_kv) {
    const int lanes = p.threads_d;
    block_local(s.query_tile, chunk_level, lanes);
    s.scores.compute_at(chunk_level).reorder(s.jj, s.ii).gpu_threads(s.jj, s.ii);
    s.qk.compute_at(s.scores, s.jj);  // a per-thread dot product
    if (stage_kv) {
        // K and V tiles of the chunk in shared memory, loaded cooperatively.
        block_local(s.key.in(s.qk), chunk_level, lanes);
        block_local(s.value.in(s.chunk_acc), chunk_level, lanes);
    }
    s.chunk_max.compute_at(chunk_level).gpu_threads(s.ii);
    s.chunk_max.update().gpu_threads(s.ii);
    s.probs.compute_at(chunk_level).reorder(s.jj, s.ii).gpu_threads(s.jj, s.ii);
    s.chunk_sum.compute_at(chunk_level).gpu_threads(s.ii);
    s.chunk_sum.update().gpu_threads(s.ii);
    block_local(s.chunk_acc, chunk_level, lanes);
    if (s.has_value_term) {
        s.value_tails.compute_at(chunk_level).gpu_threads(s.ii);
        s.value_tails.update().gpu_threads(s.ii);
        s.value_hist.compute_at(chunk_level).reorder(s.r, s.ii).gpu_threads(s.r, s.ii);
    }
}

}  // namespace

OutputLoops schedule_output_gpu(Func output, const GpuScheduleParams &params, ShapeClass) {
    OutputLoops loops;
    Var d("d"), i("i"), h("h"), b("b"), ii("ii"), d_outer("d_outer"), d_lane("d_lane");
    output.split(i, loops.tile, ii, params.blocking.query_tile, kGuard)
        .fuse(h, b, loops.heads)
        .split(d, d_outer, d_lane, params.threads_d, kGuard)
        .reorder(d_outer, d_lane, ii, loops.tile, loops.heads)
        .gpu_blocks(loops.tile, loops.heads)
        .gpu_threads(d_lane, ii);
    return loops;
}

void schedule_variant_gpu(AttentionStages &s, Func output, const OutputLoops &loops, const GpuScheduleParams &p,
                          ShapeClass shape, bool fixed_head_dim) {
    const int lanes = p.threads_d;
    if (s.blocking.merge == Merge::Online) {
        LoopLevel block_level(output, loops.tile);
        s.online_state.compute_at(block_level);
        threads_over(s.online_state, s.d, s.ii, lanes, "state");
        Var d_outer("state_rc_outer"), d_lane("state_rc_lane");
        s.online_state.update()
            .split(s.d, d_outer, d_lane, lanes, kGuard)
            .reorder(d_outer, d_lane, s.ii, s.rc)
            .gpu_threads(d_lane, s.ii);
        LoopLevel chunk_level(s.online_state, s.rc);
        schedule_chunk(s, chunk_level, p, fixed_head_dim);
        schedule_helpers(s, chunk_level, lanes);
    } else {
        // Split-K: partial states per (chunk, tile, head x batch) block, merged per output block.
        Var hb("state_hb"), d_outer("state_d_outer"), d_lane("state_d_lane");
        s.chunk_state.compute_root()
            .fuse(s.h, s.b, hb)
            .split(s.d, d_outer, d_lane, lanes, kGuard)
            .reorder(d_outer, d_lane, s.ii, s.c, s.it, hb)
            .gpu_blocks(s.c, s.it, hb)
            .gpu_threads(d_lane, s.ii);
        LoopLevel chunk_level(s.chunk_state, s.c);
        schedule_chunk(s, chunk_level, p, fixed_head_dim);
        schedule_helpers(s, chunk_level, lanes);

        LoopLevel block_level(output, loops.tile);
        s.row_max.compute_at(block_level).gpu_threads(s.ii);
        s.row_max.update().gpu_threads(s.ii);
        s.chunk_weight.compute_at(block_level).reorder(s.c, s.ii).gpu_threads(s.c, s.ii);
        s.row_sum.compute_at(block_level).gpu_threads(s.ii);
        s.row_sum.update().gpu_threads(s.ii);
        block_local(s.row_acc, block_level, lanes);
    }
    (void)shape;
}

}  // namespace attngen
