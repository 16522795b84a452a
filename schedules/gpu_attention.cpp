// GPU schedule (CUDA, OpenCL). One block per (key chunk, query tile, head x batch): K and V tiles of
// the chunk are staged in shared memory, scores and probabilities of the block live in shared
// memory, each thread owns (row, channel) entries of the block's partial softmax state, written to
// global memory. A second kernel (one block per (query tile, head x batch)) merges the partial
// states: flash-decoding split-K, for prefill and decode alike.
#include "attention_schedule.h"

#include <algorithm>

namespace attngen {

using namespace Halide;

GpuScheduleParams default_gpu_params(ShapeClass shape, const Target &target) {
    GpuScheduleParams params;
    // Both shape classes use the two-pass merge: partial states per (query tile, key chunk) block
    // in global memory, merged by a second kernel. The online form (state in shared memory across
    // the block's serial chunk loop) compiles but computes wrong row sums on Halide 14 + PoCL (see
    // README, Known limits); it stays selectable with merge=online for investigation.
    // Chosen by kernel-only sweeps on an H200 (bench/gpu_sweep/; results in bench/results/
    // gpu-2026-11-30_*_sweep.txt). Prefill: 16-row tiles (1.10-1.18x over 8), each thread computing a
    // 2-key x 4-row tile of scores and a 4-channel x 4-row tile of P.V in registers: 1.78-1.91x over
    // the first schedule (8-row tiles, one score and one output per thread) on every benchmark shape.
    // 64-key chunks would gain more at D = 64, but K and V tiles of D = 128 would then need 64 KB of
    // shared memory, over the 48 KB a block gets under Halide 14's CUDA runtime. Decode: 32 threads
    // over channels, 4 channels each in registers, 1.22x.
    if (shape == ShapeClass::Prefill) {
        params.blocking = {16, 32, Merge::TwoPass};
        params.qk_tile_keys = 2;
        params.qk_tile_rows = 4;
        params.pv_tile_d = 4;
        params.pv_tile_rows = 4;
    } else {
        params.blocking = {1, 32, Merge::TwoPass};
        params.threads_d = 32;
        params.pv_tile_d = 4;
    }
    // Relative terms by band (Shaw, DeBERTa) have run under PoCL only; CUDA keeps the per-score forms (verified on an
    // H200) until they have run on an NVIDIA device.
    params.blocking.relative_terms_by_band = !target.has_feature(Target::CUDA);
    return params;
}

namespace {

const TailStrategy kGuard = TailStrategy::GuardWithIf;

// A block's thread count is the largest extent its thread loops take over all blocks. Halide bounds
// an extent such as "the keys of chunk c that tile t can see" by interval arithmetic over c and t,
// which loses their correlation and yields bounds that grow with Lk (PoCL refused launches beyond
// ~128 keys with CL_INVALID_WORK_GROUP_SIZE; CUDA caps blocks at 1024 threads). So every thread loop
// is the inner part of a split by a constant; the outer part runs serially inside each thread.
constexpr int kKeyThreads = 16;     // threads over keys (or chunks, or relative positions)
constexpr int kRowThreadsCap = 16;  // threads over a block's query rows, at most

int row_threads(const GpuScheduleParams &p) {
    return std::min(p.blocking.query_tile, kRowThreadsCap);
}

// Threads over (first, second) arguments of a stage, `first_lanes` x `second_lanes` of them; returns
// the innermost (serial) loop, where per-element producers go.
Var threads_over(Stage stage, const VarOrRVar &first, const VarOrRVar &second, int first_lanes, int second_lanes,
                 const std::string &tag) {
    Var first_outer(tag + "_x_outer"), first_lane(tag + "_x_lane");
    Var second_outer(tag + "_y_outer"), second_lane(tag + "_y_lane");
    stage.split(first, first_outer, first_lane, first_lanes, kGuard)
        .split(second, second_outer, second_lane, second_lanes, kGuard)
        .reorder(first_outer, second_outer, first_lane, second_lane)
        .gpu_threads(first_lane, second_lane);
    return first_outer;
}

void threads_over(Stage stage, const VarOrRVar &only, int lanes, const std::string &tag) {
    Var outer(tag + "_outer"), lane(tag + "_lane");
    stage.split(only, outer, lane, lanes, kGuard).reorder(outer, lane).gpu_threads(lane);
}

// A Func computed inside a block, in shared memory, threads over its first two arguments.
void block_local(Func f, const LoopLevel &at, int first_lanes, int second_lanes) {
    std::vector<Var> args = f.args();
    f.compute_at(at);
    for (int u = -1; u < f.num_update_definitions(); u++) {
        Stage stage = u < 0 ? Stage(f) : Stage(f.update(u));
        const std::string tag = f.name() + (u < 0 ? "_t" : "_u" + std::to_string(u));
        if (args.size() >= 2) {
            threads_over(stage, args[0], args[1], first_lanes, second_lanes, tag);
        } else {
            threads_over(stage, args[0], first_lanes * second_lanes, tag);
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

void schedule_helpers(AttentionStages &s, const LoopLevel &chunk_level, const GpuScheduleParams &p) {
    for (HelperStage &helper : s.helpers) {
        // A contraction's copy stays inline; its product is the stage (operands inline).
        Func f = helper.is_contraction ? helper.product : helper.func;
        if (helper.placement == Placement::PerCall) {
            own_kernel(f);
        } else {
            // Per-tile rows are recomputed per chunk, in global memory (a slice per block): their
            // extent is a scheme parameter (DeBERTa's 2 x span relative positions per row), and
            // Halide 14's CUDA runtime cannot opt a kernel in to more than 48 KB of shared memory.
            block_local(f, chunk_level, p.threads_d, kKeyThreads);
            f.store_in(MemoryType::Heap);
        }
    }
    if (s.transforms_key) own_kernel(s.key);
}

// The stages of one (tile, chunk) block, computed at `chunk_level` in shared memory.
void schedule_chunk(AttentionStages &s, const LoopLevel &chunk_level, const GpuScheduleParams &p, bool stage_kv,
                    bool pv_in_registers) {
    const int lanes = p.threads_d, rows = row_threads(p);
    block_local(s.query_tile, chunk_level, lanes, rows);
    s.scores.compute_at(chunk_level);
    if (p.qk_tile_keys * p.qk_tile_rows == 1) {
        const Var per_score = threads_over(s.scores, s.jj, s.ii, kKeyThreads, rows, "scores");
        s.qk.compute_at(s.scores, per_score);  // a per-thread dot product
    } else {
        // Each thread computes a keys x rows tile of scores, its dot products accumulated in registers
        // with the channel loop outside: a q and a k value read from shared memory feed several FMAs.
        Var key_tile("scores_key_tile"), key_in_tile("scores_key_in_tile");
        Var row_tile("scores_row_tile"), row_in_tile("scores_row_in_tile");
        s.scores.split(s.jj, key_tile, key_in_tile, p.qk_tile_keys, kGuard)
            .split(s.ii, row_tile, row_in_tile, p.qk_tile_rows, kGuard)
            .reorder(key_in_tile, row_in_tile, key_tile, row_tile)
            .unroll(key_in_tile)
            .unroll(row_in_tile);
        const Var per_tile = threads_over(s.scores, key_tile, row_tile, std::max(1, kKeyThreads / p.qk_tile_keys),
                                          std::max(1, rows / p.qk_tile_rows), "scores");
        s.qk.compute_at(s.scores, per_tile).store_in(MemoryType::Register);
        s.qk.update().reorder(s.jj, s.ii, s.rd).unroll(s.jj).unroll(s.ii);
        s.qk.unroll(s.jj).unroll(s.ii);
    }
    // A relative table term's band update (the keys within the tile's band): a thread per row, keys serial.
    if (s.table_term_by_band) threads_over(s.scores.update(0), s.ii, rows, "scores_band");
    if (stage_kv) {
        // K and V tiles of the chunk in shared memory, loaded cooperatively.
        block_local(s.key.in(s.qk), chunk_level, lanes, kKeyThreads);
        block_local(s.value.in(s.chunk_acc), chunk_level, lanes, kKeyThreads);
    }
    for (Func row_reduction : {s.chunk_max, s.chunk_sum}) {
        row_reduction.compute_at(chunk_level);
        threads_over(row_reduction, s.ii, rows, row_reduction.name() + "_t");
        threads_over(row_reduction.update(), s.ii, rows, row_reduction.name() + "_u");
    }
    s.probs.compute_at(chunk_level);
    threads_over(s.probs, s.jj, s.ii, kKeyThreads, rows, "probs");
    if (!pv_in_registers) block_local(s.chunk_acc, chunk_level, lanes, rows);
    if (s.has_value_term) {
        s.value_tails.compute_at(chunk_level);
        threads_over(s.value_tails, s.ii, rows, "value_tails_t");
        threads_over(s.value_tails.update(), s.ii, rows, "value_tails_u");
        s.value_hist.compute_at(chunk_level);
        threads_over(s.value_hist, s.r, s.ii, kKeyThreads, rows, "value_hist");
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
    const int lanes = p.threads_d, rows = row_threads(p);
    if (s.blocking.merge == Merge::Online) {
        LoopLevel block_level(output, loops.tile);
        s.online_state.compute_at(block_level);
        threads_over(s.online_state, s.d, s.ii, lanes, rows, "state");
        Var d_outer("state_rc_outer"), d_lane("state_rc_lane");
        s.online_state.update()
            .split(s.d, d_outer, d_lane, lanes, kGuard)
            .reorder(d_outer, d_lane, s.ii, s.rc)
            .gpu_threads(d_lane, s.ii);
        LoopLevel chunk_level(s.online_state, s.rc);
        schedule_chunk(s, chunk_level, p, fixed_head_dim, false);
        schedule_helpers(s, chunk_level, p);
    } else {
        // Split-K: partial states per (chunk, tile, head x batch) block, merged per output block.
        Var hb("state_hb"), d_outer("state_d_outer"), d_lane("state_d_lane");
        const bool pv_in_registers = fixed_head_dim && p.pv_tile_d * p.pv_tile_rows > 1;
        s.chunk_state.compute_root().fuse(s.h, s.b, hb);
        if (pv_in_registers) {
            // Each thread accumulates a channels x rows tile of P.V in registers, the key loop outside:
            // a probability and a V value read from shared memory feed several FMAs.
            Var d_tile("state_d_tile"), d_in("state_d_in"), row_tile("state_row_tile"), row_in("state_row_in");
            s.chunk_state.split(s.d, d_tile, d_in, p.pv_tile_d, kGuard)
                .split(s.ii, row_tile, row_in, p.pv_tile_rows, kGuard)
                .reorder(d_in, row_in, d_tile, row_tile, s.c, s.it, hb)
                .unroll(d_in)
                .unroll(row_in)
                .gpu_blocks(s.c, s.it, hb);
            const Var per_tile =
                threads_over(s.chunk_state, d_tile, row_tile, lanes, std::max(1, rows / p.pv_tile_rows), "state");
            s.chunk_acc.compute_at(s.chunk_state, per_tile)
                .store_in(MemoryType::Register)
                .bound_extent(s.d, p.pv_tile_d)
                .bound_extent(s.ii, p.pv_tile_rows)
                .bound_extent(s.c, 1)
                .bound_extent(s.it, 1)
                .bound_extent(s.h, 1)
                .bound_extent(s.b, 1);
            s.chunk_acc.unroll(s.d).unroll(s.ii);
            s.chunk_acc.update(0).reorder(s.d, s.ii, s.rv).unroll(s.d).unroll(s.ii);
            for (int u = 1; u < s.chunk_acc.num_update_definitions(); u++) {  // the value term's
                if (!s.chunk_acc.rvars(u).empty()) s.chunk_acc.update(u).reorder(s.d, s.ii, s.rr);
                s.chunk_acc.update(u).unroll(s.d).unroll(s.ii);
            }
        } else {
            s.chunk_state.split(s.d, d_outer, d_lane, lanes, kGuard)
                .reorder(d_outer, d_lane, s.ii, s.c, s.it, hb)
                .gpu_blocks(s.c, s.it, hb)
                .gpu_threads(d_lane, s.ii);
        }
        LoopLevel chunk_level(s.chunk_state, s.c);
        schedule_chunk(s, chunk_level, p, fixed_head_dim, pv_in_registers);
        schedule_helpers(s, chunk_level, p);

        LoopLevel block_level(output, loops.tile);
        for (Func row_reduction : {s.row_max, s.row_sum}) {
            row_reduction.compute_at(block_level);
            threads_over(row_reduction, s.ii, rows, row_reduction.name() + "_t");
            threads_over(row_reduction.update(), s.ii, rows, row_reduction.name() + "_u");
        }
        // One weight per (chunk, row): Lk / key_chunk of them per row, in global memory so that
        // long sequences do not outgrow shared memory.
        s.chunk_weight.compute_at(block_level).store_in(MemoryType::Heap);
        threads_over(s.chunk_weight, s.c, s.ii, kKeyThreads, rows, "chunk_weight");
        block_local(s.row_acc, block_level, lanes, rows);
    }
    (void)shape;
}

}  // namespace attngen
