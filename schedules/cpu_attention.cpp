// CPU schedule: one parallel task per (query tile, head, batch). Inside a task, key chunks are
// visited in order; per chunk a QK register block (rows vectorized, keys unrolled, d outermost),
// vectorized softmax statistics, and a P.V register block (rows unrolled, d vectorized).
#include "attention_schedule.h"

#include <stdexcept>

namespace attngen {

using namespace Halide;

ShapeClass parse_shape_class(const std::string &name) {
    if (name == "prefill") return ShapeClass::Prefill;
    if (name == "decode") return ShapeClass::Decode;
    throw std::runtime_error("attngen: unknown shape class '" + name + "' (prefill|decode)");
}

const char *shape_class_name(ShapeClass shape) { return shape == ShapeClass::Prefill ? "prefill" : "decode"; }

CpuScheduleParams default_cpu_params(ShapeClass shape) {
    CpuScheduleParams params;
    if (shape == ShapeClass::Decode) {
        params.blocking = {1, 512};
        params.split_keys = true;
    }
    return params;
}

OutputLoops schedule_output_cpu(Func output, const CpuScheduleParams &params, ShapeClass shape) {
    OutputLoops loops;
    Var d("d"), i("i"), h("h"), b("b"), ii("ii"), row_block("row_block"), row("row");
    const int tile = params.blocking.query_tile;
    output.split(i, loops.tile, ii, tile, TailStrategy::GuardWithIf)
        .fuse(h, b, loops.heads)
        .fuse(loops.tile, loops.heads, loops.task)
        .parallel(loops.task);
    if (shape == ShapeClass::Prefill && tile % params.pv_block_rows == 0) {
        output.split(ii, row_block, row, params.pv_block_rows, TailStrategy::GuardWithIf)
            .reorder(d, row, row_block, loops.task);
    }
    output.vectorize(d, params.vector_width, TailStrategy::GuardWithIf);
    return loops;
}

namespace {

// Where the stages of one (tile, chunk) block are computed: per chunk of the two-pass merge, or
// per iteration of the online merge's chunk loop.
LoopLevel chunk_level(const AttentionStages &s) {
    return s.blocking.merge == Merge::TwoPass ? LoopLevel(s.chunk_state, s.c) : LoopLevel(s.online_state, s.rc);
}

void schedule_helpers(AttentionStages &s, Func output, const OutputLoops &loops, int vector_width) {
    for (HelperStage &helper : s.helpers) {
        Func f = helper.func;
        std::vector<Var> args = f.args();
        if (args.empty()) {  // a per-call scalar
            f.compute_root();
            continue;
        }
        switch (helper.placement) {
        case Placement::PerCall:
            f.compute_root();
            if (args.size() > 1) f.parallel(args.back());
            break;
        case Placement::PerQueryTile:
            f.compute_at(output, loops.task);
            break;
        case Placement::PerKeyChunk:
            f.compute_at(chunk_level(s));
            break;
        }
        f.vectorize(args.front(), vector_width, TailStrategy::GuardWithIf);
        for (int u = 0; u < f.num_update_definitions(); u++) {
            // Vectorize the innermost pure dimension of an update when it has one.
            std::vector<Expr> update_args = f.update_args(u);
            if (!update_args.empty() && update_args.front().as<Internal::Variable>() &&
                update_args.front().as<Internal::Variable>()->name == args.front().name()) {
                f.update(u).vectorize(args.front(), vector_width, TailStrategy::GuardWithIf);
            }
        }
    }
}

void schedule_merge(AttentionStages &s, Func output, const OutputLoops &loops, int vw) {
    const TailStrategy guard = TailStrategy::GuardWithIf;
    if (s.blocking.merge == Merge::Online) {
        s.online_state.compute_at(output, loops.task).vectorize(s.d, vw, guard);
        s.online_state.update().reorder(s.d, s.ii, s.rc).vectorize(s.d, vw, guard);
        return;
    }
    s.row_max.compute_at(output, loops.task).vectorize(s.ii, vw, guard);
    s.row_max.update().vectorize(s.ii, vw, guard);
    s.chunk_weight.compute_at(output, loops.task).vectorize(s.ii, vw, guard);
    s.row_sum.compute_at(output, loops.task).vectorize(s.ii, vw, guard);
    s.row_sum.update().vectorize(s.ii, vw, guard);
    s.row_acc.compute_at(output, loops.task).vectorize(s.d, vw, guard);
    s.row_acc.update().reorder(s.d, s.ii, s.rc).vectorize(s.d, vw, guard);
}

void schedule_key_transform(AttentionStages &s, int vw) {
    if (!s.transforms_key) return;
    Var g_b("g_b");
    std::vector<Var> args = s.key.args();  // (d, j, g, b)
    s.key.compute_root().fuse(args[2], args[3], g_b).parallel(g_b).vectorize(args[0], vw, TailStrategy::GuardWithIf);
}

void schedule_prefill(AttentionStages &s, Func output, const OutputLoops &loops, const CpuScheduleParams &p,
                      bool fixed_head_dim) {
    const int vw = p.vector_width;
    const int tile = p.blocking.query_tile;
    const TailStrategy guard = TailStrategy::GuardWithIf;
    Var row_block("row_block"), row("row"), key_block("key_block"), key("key"), lanes("lanes"), row_vec("row_vec");

    schedule_merge(s, output, loops, vw);

    // Query rows, stored row-innermost so the QK block loads a vector of rows per channel.
    s.query_tile.compute_at(output, loops.task)
        .reorder_storage(s.ii, s.d, s.it, s.h, s.b)
        .reorder(s.ii, s.d)
        .vectorize(s.ii, vw, guard);

    const bool two_pass = s.blocking.merge == Merge::TwoPass;
    const bool rows_in_blocks = two_pass && tile % p.pv_block_rows == 0;
    const LoopLevel per_chunk = chunk_level(s);
    if (two_pass) {
        s.chunk_state.compute_at(output, loops.task);
        if (rows_in_blocks) s.chunk_state.split(s.ii, row_block, row, p.pv_block_rows);
        s.chunk_state.vectorize(s.d, vw, guard);
    }

    // QK^T register block: (tile rows as vectors) x (qk_block_keys keys), d outermost.
    const bool row_vectors = tile % vw == 0;
    s.scores.compute_at(per_chunk)
        .split(s.jj, key_block, key, p.qk_block_keys, TailStrategy::RoundUp)
        .reorder(s.ii, key, key_block);
    if (row_vectors) {
        s.scores.split(s.ii, row_vec, lanes, vw).vectorize(lanes).unroll(row_vec).unroll(key);
    } else {
        s.scores.vectorize(s.ii, vw, guard);
    }
    s.qk.compute_at(s.scores, key_block);
    if (row_vectors) {
        s.qk.split(s.ii, row_vec, lanes, vw).vectorize(lanes).unroll(row_vec).unroll(s.jj);
        s.qk.update()
            .split(s.ii, row_vec, lanes, vw)
            .reorder(lanes, row_vec, s.jj, s.rd)
            .vectorize(lanes)
            .unroll(row_vec)
            .unroll(s.jj);
    } else {
        s.qk.vectorize(s.ii, vw, guard);
        s.qk.update().reorder(s.ii, s.jj, s.rd).vectorize(s.ii, vw, guard);
    }

    // Softmax statistics of the chunk, vectorized over rows.
    s.chunk_max.compute_at(per_chunk).vectorize(s.ii, vw, guard);
    s.chunk_max.update().vectorize(s.ii, vw, guard);
    s.probs.compute_at(per_chunk).vectorize(s.ii, vw, guard);
    s.chunk_sum.compute_at(per_chunk).vectorize(s.ii, vw, guard);
    s.chunk_sum.update().vectorize(s.ii, vw, guard);

    // P.V register block: pv_block_rows rows x D, accumulated over the chunk's keys.
    Var d_block("d_block"), d_lane("d_lane");
    s.chunk_acc.compute_at(rows_in_blocks ? LoopLevel(s.chunk_state, row_block) : per_chunk).vectorize(s.d, vw, guard);
    if (fixed_head_dim && rows_in_blocks) {
        s.chunk_acc.update(0)
            .split(s.d, d_block, d_lane, vw)
            .reorder(d_lane, d_block, s.ii, s.rj)
            .vectorize(d_lane)
            .unroll(d_block)
            .unroll(s.ii);
    } else {
        s.chunk_acc.update(0).reorder(s.d, s.ii, s.rj).vectorize(s.d, vw, guard);
    }
    if (s.has_value_term) {
        s.value_hist.compute_at(per_chunk).vectorize(s.ii, vw, guard);
        s.chunk_acc.update(1).reorder(s.d, s.ii, s.rr).vectorize(s.d, vw, guard);
    }

    schedule_key_transform(s, vw);
    schedule_helpers(s, output, loops, vw);
}

void schedule_decode(AttentionStages &s, Func output, const OutputLoops &loops, const CpuScheduleParams &p,
                     bool fixed_head_dim) {
    const int vw = p.vector_width;
    const TailStrategy guard = TailStrategy::GuardWithIf;
    schedule_merge(s, output, loops, vw);

    s.query_tile.compute_at(output, loops.task).vectorize(s.d, vw, guard);
    const LoopLevel per_chunk = chunk_level(s);
    if (s.blocking.merge == Merge::TwoPass) {
        s.chunk_state.compute_at(output, loops.task).vectorize(s.d, vw, guard);
        if (p.split_keys) s.chunk_state.parallel(s.c);
    }

    // One query row: scores are dot products over d, vectorized along d and reduced per key.
    s.scores.compute_at(per_chunk).vectorize(s.jj, vw, guard);
    s.qk.compute_at(per_chunk).vectorize(s.jj, vw, guard);
    if (fixed_head_dim) {
        RVar d_outer("d_outer"), d_lane("d_lane");
        Var lane("lane");
        Func partial = s.qk.update().split(s.rd, d_outer, d_lane, vw).rfactor(d_lane, lane);
        partial.compute_at(s.qk, s.jj).vectorize(lane);
        partial.update().vectorize(lane);
    } else {
        s.qk.update().unscheduled();  // generic head_dim: a plain dot product per key
    }
    s.chunk_max.compute_at(per_chunk);
    s.probs.compute_at(per_chunk).vectorize(s.jj, vw, guard);
    s.chunk_sum.compute_at(per_chunk);
    s.chunk_acc.compute_at(per_chunk).vectorize(s.d, vw, guard);
    Var d_block("d_block"), d_lane("d_lane");
    if (fixed_head_dim) {
        s.chunk_acc.update(0).split(s.d, d_block, d_lane, vw).reorder(d_lane, d_block, s.ii, s.rj).vectorize(d_lane).unroll(d_block);
    } else {
        s.chunk_acc.update(0).reorder(s.d, s.ii, s.rj).vectorize(s.d, vw, guard);
    }
    if (s.has_value_term) {
        s.value_hist.compute_at(per_chunk);
        s.chunk_acc.update(1).reorder(s.d, s.ii, s.rr).vectorize(s.d, vw, guard);
    }

    schedule_key_transform(s, vw);
    schedule_helpers(s, output, loops, vw);
}

}  // namespace

void schedule_variant_cpu(AttentionStages &s, Func output, const OutputLoops &loops, const CpuScheduleParams &params,
                          ShapeClass shape, bool fixed_head_dim) {
    if (shape == ShapeClass::Prefill) {
        schedule_prefill(s, output, loops, params, fixed_head_dim);
    } else {
        schedule_decode(s, output, loops, params, fixed_head_dim);
    }
}

}  // namespace attngen
