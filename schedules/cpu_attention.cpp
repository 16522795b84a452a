// CPU schedule: one parallel task per (query tile, head, batch) (RoPE / xPos / DeBERTa prefill: per
// (head, batch) pair, its tiles in order after its keys are rotated or its p2c table computed; decode:
// per group of query heads that share a KV head, in blocks of heads where they can). Inside
// a tile, key chunks are visited in order; per chunk a QK register block (rows vectorized, keys
// unrolled, d outermost), vectorized softmax statistics, and a P.V register block (rows unrolled, d
// vectorized).
#include "attention_schedule.h"
#include "positional_schedules.h"

#include <algorithm>
#include <stdexcept>

namespace attngen {

using namespace Halide;

ShapeClass parse_shape_class(const std::string &name) {
    if (name == "prefill") return ShapeClass::Prefill;
    if (name == "decode") return ShapeClass::Decode;
    throw std::runtime_error("attngen: unknown shape class '" + name + "' (prefill|decode)");
}

const char *shape_class_name(ShapeClass shape) {
    return shape == ShapeClass::Prefill ? "prefill" : "decode";
}

CpuScheduleParams default_cpu_params(ShapeClass shape) {
    CpuScheduleParams params;
    if (shape == ShapeClass::Prefill) {
        // 48-row tiles (3 row vectors) x 4-key QK blocks; 128-key chunks keep a chunk's V (32 KiB at
        // D = 64) and probabilities near L1 for the P.V passes.
        params.blocking = {48, 128};
        params.qk_block_keys = 4;
    }
    if (shape == ShapeClass::Decode) {
        params.blocking = {1, 512, Merge::TwoPass, /*trim_chunk_keys=*/false};
        params.split_keys = true;
    }
    return params;
}

OutputLoops schedule_output_cpu(Func output, const CpuScheduleParams &params, ShapeClass shape,
                                const Expr &tiles_per_task, const Expr &heads_per_task) {
    OutputLoops loops;
    Var d("d"), i("i"), h("h"), b("b"), ii("ii"), row_block("row_block"), row("row"), head_group("head_group");
    const int tile = params.blocking.query_tile;
    output.split(i, loops.tile, ii, tile, TailStrategy::GuardWithIf);
    if (heads_per_task.defined()) {
        // A task's heads divide the heads (a KV group does, as does schedule_attention's power of two): the
        // guard never fails.
        output.split(h, head_group, loops.task_head, heads_per_task, TailStrategy::GuardWithIf)
            .reorder(d, ii, loops.task_head, loops.tile, b, head_group)
            .fuse(b, head_group, loops.heads);
    } else {
        output.fuse(h, b, loops.heads);
    }
    if (tiles_per_task.defined()) {
        // A task: a (head, batch) pair, its tiles in runs of tiles_per_task, each run in order. Runs
        // are nested parallel tasks (a single run where the pairs alone keep the threads busy); a run
        // divides the pair's tiles exactly, so ShiftInwards never shifts and adds no guard.
        output.split(loops.tile, loops.tile_run, loops.task, tiles_per_task, TailStrategy::ShiftInwards)
            .reorder(loops.task, loops.tile_run, loops.heads)
            .parallel(loops.heads)
            .parallel(loops.tile_run);
    } else {
        output.fuse(loops.tile, loops.heads, loops.task).parallel(loops.task);
    }
    if (shape == ShapeClass::Prefill && tile % params.pv_block_rows == 0) {
        output.split(ii, row_block, row, params.pv_block_rows, TailStrategy::GuardWithIf)
            .reorder(d, row, row_block, loops.task);
    }
    output.vectorize(d, params.vector_width, TailStrategy::GuardWithIf);
    return loops;
}

namespace {

constexpr int kMaxAccumulatorVectors = 24;
// A P.V block spans at most this many vectors of d: a wider head dim (D = 128) is covered in parts,
// each accumulated over the chunk's keys in turn, so a block can keep more rows (each V vector
// loaded feeds one FMA per row; with 3 rows of 8 vectors V streams from L2 faster than it can).
constexpr int kPvBlockVectors = 4;

// Decode (fp32 dot products) reads a chunk's keys (in q.k) and values (in P.V) as interleaved runs of
// the chunk, one key of each in turn: a core streams that many memory pages at once instead of one.
// Multi-head tiles read kMultiHeadDecodeKeyRuns; grouped-query head blocks, whose compute per key is a
// block's, CpuScheduleParams::grouped_decode_key_runs. Intel Xeon (family 6 model 207),
// (1,32,1,4096,128), K and V cycled through twice the L3 (AOT, kv_layers), time with 4 runs / without:
// 8 KV heads plain 0.79-0.81x, ALiBi, T5, Shaw, DeBERTa 0.81-0.86x, RoPE and xPos (whose time goes
// elsewhere) 0.92-0.98x, bf16 K/V 0.72-0.97x; 32 KV heads, plain 0.92-0.96x, ALiBi, Shaw, RoPE
// 0.92-0.96x, T5 and xPos 0.99-1.01x (8 runs: the same as 4). AMD Zen 5 (family 26 model 2), same
// shape and method, 3 alternating runs: 8 KV heads, 1 run over 4, plain 0.72-0.98x, ALiBi 0.68-1.07x,
// T5 0.55-0.97x, Shaw 0.85-1.13x, DeBERTa 0.78-0.91x, RoPE 0.71-1.12x; 32 KV heads 0.77-1.57x (RoPE
// 1.11-1.57x), so there the tuned entries for any vendor set 1 for grouped blocks only, and not for
// RoPE or xPos.
// bf16 keys rotated inside q.k (RoPE, xPos in multi-head tiles), whose per-key rotation table takes twice
// the key's bytes, are read in one run: AMD Zen 5, the bench's (1,32,1,4096,128) bf16 rows, 32 KV heads,
// kernels of 1 run beside 4, 2 alternating processes, bf16 over fp32 paired, 1 run / 4 runs: RoPE half
// 1.43-1.45x / 1.21-1.22x, interleaved 1.53-1.74x / 1.22-1.26x, xPos 1.54-1.65x / 1.37-1.39x. (The same for
// every scheme's bf16 keys: plain and ALiBi level, Shaw 1.54-1.55x / 1.44-1.50x, TXL 1.28-1.32x /
// 1.14-1.18x, but T5 1.60-1.68x / 1.83-1.86x, DeBERTa 1.41-1.44x / 1.52-1.55x.)
constexpr int kMultiHeadDecodeKeyRuns = 4;

// Vectors of d a P.V block covers at a time, of a fixed head_dim's `vectors`: all of them, or parts of
// kPvBlockVectors where they divide.
int pv_part_vectors(int vectors) {
    return vectors > kPvBlockVectors && vectors % kPvBlockVectors == 0 ? kPvBlockVectors : vectors;
}

// A head block's P.V register block in decode: `heads` of the block's heads x `part_vectors` vectors of d,
// accumulated over a chunk's keys in one pass, then the next heads or part. Whole V rows per pass wherever
// they fit in kMaxDecodePvAccumulators: a pass over part of d reads each row of the chunk in part, so memory
// sees a strided stream, and the next part's pass reads the rest again. A pass over fewer heads reads whole
// rows and leaves the chunk in L2 for the block's next heads. JIT, (1,32,1,4096,128) with 8 KV heads, L3
// flushed, 9-21 paired rounds (AMD Zen 5, 2026-12-06), time with 2 heads x 8 vectors over 4 heads x 4:
// plain 0.86x (causal 0.81x), ALiBi 0.82x, T5 0.91x, Shaw 0.79x, DeBERTa 0.81x, TXL 0.92x, xPos 0.90x,
// RoPE 1.01x; 1 head x 8 vectors 1.07x.
constexpr int kMaxDecodePvAccumulators = 16;
struct DecodePvBlock {
    int heads, part_vectors;
};
DecodePvBlock decode_pv_block(int block_heads, int vectors) {
    if (vectors > kMaxDecodePvAccumulators) return {block_heads, pv_part_vectors(vectors)};
    int heads = block_heads;
    while (heads > 1 && (heads * vectors > kMaxDecodePvAccumulators || block_heads % heads != 0))
        heads--;
    return {heads, vectors};
}

// Vectors of rows in a per-call contraction's register block (DeBERTa's p2c: rows are table rows): 3
// measured as well as 2 or 4.
constexpr int kPerCallRowVectors = 3;

// Rows of a prefill P.V register block with a fixed head_dim: at most pv_block_rows, at most 24
// accumulator vectors (of 32 registers; the rest hold V and the broadcast P), and a divisor of the
// tile so that blocks align with tiles.
int pv_rows_for(const CpuScheduleParams &params, int head_dim) {
    const int vectors = std::max(1, head_dim / params.vector_width);
    const int part_vectors = pv_part_vectors(vectors);
    int rows = std::max(1, params.pv_block_rows);
    while (rows > 1 && (rows * part_vectors > kMaxAccumulatorVectors || params.blocking.query_tile % rows != 0))
        rows--;
    return rows;
}

}  // namespace

Blocking cpu_algorithm_blocking(const CpuScheduleParams &params, ShapeClass shape) {
    Blocking blocking = params.blocking;
    // P.V trimmed per register block (a two-pass prefill's blocks span the same rows for the fast
    // head dims: D = 64 and 128 take blocks of at most 4 accumulator vectors).
    if (shape == ShapeClass::Prefill && blocking.merge == Merge::TwoPass && blocking.trim_chunk_keys &&
        blocking.query_tile > 1) {
        blocking.value_row_group = pv_rows_for(params, kPvBlockVectors * params.vector_width);
    }
    // Prefill masks only the keys some row of a tile cannot see (a causal diagonal, a window's edge);
    // chunks every row sees whole skip the two compares and the select per score (6-7 % of a bf16
    // (1,8,512,512,64) call in `perf`). JIT, fp32, same process, 11 rounds (AMD Zen 5, 2026-12-06), time
    // over masking every score: plain 512^2 0.97x (causal 0.98x), 4x256^2 0.99x (1.00x), 2048^2 0.98x;
    // causal ALiBi 0.99x, RoPE 0.99x, Shaw 1.02x, DeBERTa 1.00x. With the bf16 pairs' chunk sum as dot
    // products (define_attention), AOT, 2 alternating processes: bf16 prefill over fp32, paired, plain
    // 1.42-1.56x -> 1.52-1.64x at 512^2 and 4x256^2, ALiBi 1.42-1.56x -> 1.49-1.62x, Shaw 1.30-1.43x ->
    // 1.33-1.50x, RoPE half pairs 1.40-1.53x -> 1.42-1.59x.
    blocking.mask_keys_by_range = shape == ShapeClass::Prefill && blocking.query_tile > 1;
    // Decode chunks are computed whole (trim_chunk_keys off), but for the blocks of 128 keys past the last
    // one a row sees (Blocking::tail_key_block): a partial last chunk, or a chunk longer than the keys,
    // costs about what it holds. AOT, plain, (1,32,1,Lk,128), K/V cycled through 512 MiB, alternating
    // processes (A B B A), time over whole chunks: bf16 Lk 256 0.82x, 1025 0.80x, 4097 0.94x, 4096 0.99x;
    // fp32 1025 0.92x, 4096 1.01x; with K/V in L3, bf16 Lk 128 0.41x. (Per-key tests in place of blocks,
    // trim_chunk_keys, took 1.23x at 4096: the chunk's max and sum then run a key at a time.)
    if (shape == ShapeClass::Decode) blocking.tail_key_block = 128;
    // Per-call contractions (DeBERTa's p2c) in blocks of their register block's rows, each computed where the
    // mask lets a query read it (schedule_contraction).
    if (shape == ShapeClass::Prefill && blocking.query_tile > 1)
        blocking.contraction_run_block = kPerCallRowVectors * params.vector_width;
    // Decode rotates keys (RoPE, xPos) inside q.k by rotating the query instead (schedule_decode), and
    // folds a table term's edge rows into the query (DeBERTa's p2c beyond max_position - 1).
    blocking.key_rotation_in_product = shape == ShapeClass::Decode;
    blocking.fold_edge_rows = shape == ShapeClass::Decode;
    // Decode tasks run a KV group's query heads in turn on each key chunk: the chunk's K and V stay
    // within half of Zen 4's 1 MiB L2 (tuned on D = 64, a 1024-key chunk is 1 MiB at D = 128: T5
    // with 8 KV heads took 1.19x as long as with 512 keys). Split-K decode keeps its chunks (TXL:
    // 1024 keys took 1.07x as long as the tuned 2048 at D = 64).
    if (shape == ShapeClass::Decode && !params.split_keys) blocking.chunk_kv_bytes_max = 512 * 1024;
    if (shape == ShapeClass::Decode && decode_tasks_run_head_groups(params)) {
        // Head-group decode tasks run query heads that share a KV head in blocks (see head_sharing_split).
        blocking.head_block = params.decode_head_block;
        // Multi-head decode (each KV head serves one query head, so nothing reads a chunk again) in chunks
        // of 4096 keys where the pipeline makes it a copy of its own (head_sharing_split). Bench binaries
        // alternating, (1,32,1,4096,128), time over the capped chunks (1024 keys bf16, 512 fp32), none /
        // causal: bf16 plain 0.88x / 0.99x, ALiBi 0.85x / 0.99x, T5 0.95x / 0.88x; fp32 plain 0.89x /
        // 0.93x, ALiBi 0.93x / 0.78x (AMD Zen 5, 2026-12-07).
        blocking.multi_head_key_chunk = 4096;
    }
    return blocking;
}

namespace {

// The per-chunk temporaries (tile x chunk at most) are asked for on the task's stack: one heap
// allocation and free per chunk and stage would otherwise cost more than a small chunk's arithmetic,
// and contend for the allocator between threads. The P.V block only with a fixed D. Halide keeps
// stack allocations to 16 KB: the tile x chunk scores and probabilities (32 KB with the tuned 64 x 128)
// still go to halide_malloc, which the runtime serves from a per-thread block cache (allocator.cpp).
void chunk_temporaries_on_stack(AttentionStages &s, bool fixed_head_dim) {
    for (Func f : {s.qk, s.scores, s.chunk_max, s.probs, s.chunk_sum})
        f.store_in(MemoryType::Stack);
    for (Func f : {s.query_pairs, s.probs_pairs})
        if (f.defined()) f.store_in(MemoryType::Stack);
    if (fixed_head_dim) s.chunk_acc.store_in(MemoryType::Stack);
}

// Where the stages of one (tile, chunk) block are computed: per chunk of the two-pass merge, or
// per iteration of the online merge's chunk loop.
LoopLevel chunk_level(const AttentionStages &s) {
    return s.blocking.merge == Merge::TwoPass ? LoopLevel(s.chunk_state, s.c) : LoopLevel(s.online_state, s.rc);
}

// Helper stages of the schemes, placed where the scheme asked. Helpers are either tables
// (vectorized along their first argument) or content-position products, reductions over the head
// channels of two d-innermost operands: those reduce a vector of channels at a time (both operands
// load contiguously) and sum it once per output.
// A contraction out(x, i) = sum_c rows(c, i) table(c, x), blocked like a matrix product: rows are
// staged transposed (i innermost); a register block of 4 table rows x `row_vectors` vectors of i
// accumulates over the channels (each table value broadcast feeds row_vectors FMAs: a single vector
// of i left the block load-bound, 9 loads per 8 FMAs).
void schedule_contraction(HelperStage &helper, const LoopLevel &level, int vector_width, int row_vectors) {
    // A skewed contraction's block is one group of table rows, aligned, so its rows load from one run.
    const int table_rows_per_block = helper.skew_group > 0 ? helper.skew_group : 4;
    Func out = helper.func, product = helper.product, rows = helper.rows;
    std::vector<Var> args = out.args();       // x, i, h, b
    std::vector<Var> row_args = rows.args();  // c, i, h, b (bf16_pairs: pair, i, c_pair, h, b)
    Var x_block("x_block"), x_lane("x_lane"), i_block("i_block"), i_lane("i_lane");
    Var i_vector("i_vector"), i_vector_lane("i_vector_lane");
    out.compute_at(level);
    rows.compute_at(level);
    if (helper.skew_group > 0) out.align_bounds(args[0], helper.skew_group);
    out.reorder_storage(args[1], args[0], args[2], args[3]);
    if (helper.run.defined()) {
        // In run blocks (the algorithm's, of vector_width * kPerCallRowVectors rows): a block of a group's
        // run is the register block, computed only where the block's predicate holds.
        const RDom &run = helper.run;
        RVar row_vector("row_vector"), row_lane("row_lane");
        out.update()
            .split(args[0], x_block, x_lane, table_rows_per_block, TailStrategy::RoundUp)
            .split(run.x, row_vector, row_lane, vector_width)
            .reorder(row_lane, row_vector, x_lane, run.y, x_block)
            // Each (x, run row) is written once: no race between the lanes of rows.
            .allow_race_conditions()
            .vectorize(row_lane)
            .unroll(row_vector)
            .unroll(x_lane);
        // (Bounds inference widens the product's rows by the block predicate into a dynamic extent, which
        // kept the accumulators in memory: the block's extent, fixed.)
        product.compute_at(out, run.y).bound_extent(args[1], run.x.extent());
    } else {
        out.split(args[0], x_block, x_lane, table_rows_per_block, TailStrategy::RoundUp)
            .split(args[1], i_block, i_lane, vector_width * row_vectors, TailStrategy::RoundUp)
            .reorder(i_lane, x_lane, i_block, x_block)
            .vectorize(i_lane, vector_width)
            .unroll(x_lane);
        product.compute_at(out, i_block);
    }
    product.reorder_storage(args[1], args[0]).vectorize(args[1], vector_width);
    if (helper.bf16_pairs) {
        // Each lane a pair of channels (the atomic, vectorized pair inside the row lanes: vdpbf16ps, as
        // prefill's q.k); the rows are staged with the pair innermost, then the rows.
        const RDom &rc = helper.channels;  // (pair, c_pair)
        product.update()
            .split(args[1], i_vector, i_vector_lane, vector_width)
            .reorder(rc.x, i_vector_lane, i_vector, args[0], rc.y)
            .atomic()
            .vectorize(rc.x)
            .vectorize(i_vector_lane)
            .unroll(i_vector)
            .unroll(args[0]);
        rows.bound(row_args[0], 0, 2)
            .reorder(row_args[0], row_args[1], row_args[2])
            .vectorize(row_args[0])
            .vectorize(row_args[1], vector_width, TailStrategy::GuardWithIf);
        return;
    }
    product.update()
        .split(args[1], i_vector, i_vector_lane, vector_width)
        .reorder(i_vector_lane, i_vector, args[0], helper.channels.x)
        .vectorize(i_vector_lane)
        .unroll(i_vector)
        .unroll(args[0]);
    rows.reorder_storage(row_args[1], row_args[0], row_args[2], row_args[3])
        .reorder(row_args[1], row_args[0])
        .vectorize(row_args[1], vector_width, TailStrategy::GuardWithIf);
}

// A contraction evaluated only where scores use it (`where`: per vector of keys), one dot product per
// used (x, i) point, a vector of channels at a time. For single-row tiles (decode), where a tile-wide
// or call-wide table would compute far more points than the row reads.
void schedule_contraction_per_score(HelperStage &helper, const AttentionStages &s, const LoopLevel &where,
                                    int vector_width, bool fixed_head_dim) {
    // On the stack: its extent (the table rows a vector of keys reaches) is dynamic, which Halide serves
    // from a slot reused across iterations rather than a halide_malloc and free per vector of keys (one
    // per 16 keys and head in decode: 8192 per (1,32,1,4096,128) call).
    helper.product.compute_at(where).store_in(MemoryType::Stack);
    const auto *head_dim = s.head_dim.as<Internal::IntImm>();
    if (fixed_head_dim && head_dim && head_dim->value % vector_width == 0) {
        RVar outer("outer"), lane("lane");
        Var lane_v("lane_v");
        Func partial =
            helper.product.update().split(helper.channels.x, outer, lane, vector_width).rfactor(lane, lane_v);
        partial.compute_at(helper.product, helper.product.args()[0]).vectorize(lane_v);
        partial.update().vectorize(lane_v);
        helper.product.update().atomic().vectorize(lane);
    }
}

// A per-call contraction (DeBERTa's p2c) is computed at `per_pair`, once per (head, batch) pair before
// its tiles (prefill_runs_pair_tasks); with contractions_per_score (decode) none needs it. Contractions
// per score go at `per_score` (by default the scores' vector of keys).
void schedule_helpers(AttentionStages &s, const LoopLevel &per_pair, const LoopLevel &per_tile,
                      const LoopLevel &per_chunk, const LoopLevel &per_score, int vector_width, bool fixed_head_dim,
                      bool contractions_per_score = false) {
    // A per-tile contraction's rows are the tile's rows: its register block covers them (up to 4 vectors).
    const int tile = s.blocking.query_tile;
    const int tile_row_vectors = tile % vector_width == 0 ? std::clamp(tile / vector_width, 1, 4) : 1;
    for (HelperStage &helper : s.helpers) {
        Func f = helper.func;
        std::vector<Var> args = f.args();
        if (helper.is_contraction && (contractions_per_score || helper.per_score)) {
            schedule_contraction_per_score(helper, s, per_score, vector_width, fixed_head_dim);
            continue;
        }
        if (helper.is_contraction) {
            const bool per_call = helper.placement == Placement::PerCall;
            const LoopLevel &level = per_call                                     ? per_pair
                                     : helper.placement == Placement::PerKeyChunk ? per_chunk
                                                                                  : per_tile;
            schedule_contraction(helper, level, vector_width, per_call ? kPerCallRowVectors : tile_row_vectors);
            continue;
        }
        if (args.empty()) {  // a per-call scalar
            f.compute_root();
            continue;
        }
        switch (helper.placement) {
            case Placement::PerCall:
                f.compute_root();
                if (args.size() >= 4) {
                    Var outer("helper_outer");
                    f.fuse(args[args.size() - 2], args.back(), outer).parallel(outer);
                } else if (args.size() == 3) {
                    schedule_position_table(f);  // RoPE / xPos: decode's 4096 x 64 key table on every thread
                } else if (args.size() > 1) {
                    f.parallel(args.back());
                }
                break;
            case Placement::PerQueryTile:
                f.compute_at(per_tile);
                break;
            case Placement::PerKeyChunk:
                f.compute_at(per_chunk);
                break;
        }
        f.vectorize(args.front(), vector_width, TailStrategy::GuardWithIf);
        for (int u = 0; u < f.num_update_definitions(); u++) {
            std::vector<RVar> rvars = f.rvars(u);
            if (rvars.size() == 1 && fixed_head_dim && s.head_dim.as<Internal::IntImm>() &&
                s.head_dim.as<Internal::IntImm>()->value % vector_width == 0) {
                // Partial sums per channel lane (contiguous loads of both operands), then one
                // horizontal sum per output (a vector reduction, not a scalar loop over the lanes).
                RVar channel_block("channel_block"), channel_lane("channel_lane");
                Var lane("lane");
                Func partial =
                    f.update(u).split(rvars[0], channel_block, channel_lane, vector_width).rfactor(channel_lane, lane);
                partial.compute_at(f, args.front()).vectorize(lane);
                partial.update().vectorize(lane);
                f.update(u).atomic().vectorize(channel_lane);
                if (helper.placement == Placement::PerCall && args.size() >= 4) {
                    Var outer("helper_update_outer");
                    f.update(u).fuse(args[args.size() - 2], args.back(), outer).parallel(outer);
                }
                continue;
            }
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

// Channels of a transformed row (RoPE, xPos) vectorized; with a fixed head_dim the channel vectors
// are unrolled, so each vector's pairing (which half, which partner) is a constant: plain loads, not
// gathers. Specialized on the scheme's conditions (RoPE: rot_dim == head_dim).
void schedule_transformed_rows(Func rows, const AttentionStages &s, int vw, bool fixed_head_dim) {
    Var d_block("d_block"), d_lane("d_lane");
    Var channel = rows.args()[0];
    const auto *head_dim = s.head_dim.as<Internal::IntImm>();
    if (fixed_head_dim && head_dim && head_dim->value % vw == 0) {
        rows.split(channel, d_block, d_lane, vw).vectorize(d_lane).unroll(d_block);
    } else {
        rows.vectorize(channel, vw, TailStrategy::GuardWithIf);
    }
    for (const Expr &condition : s.transform_specializations)
        rows.specialize(condition);
}

// Transformed keys (RoPE, xPos): for prefill once per (head, batch) pair, before its query tiles
// (every tile reads every key: computed there they stay in the core's L2 rather than making a round
// trip through memory as a call-wide buffer). Decode reads each key once: with a fixed head_dim it
// rotates keys inside the dot product (schedule_decode), otherwise per key chunk.
void schedule_key_transform(AttentionStages &s, int vw, bool fixed_head_dim, const LoopLevel &level) {
    if (!s.transforms_key) return;
    s.key.compute_at(level);
    schedule_transformed_rows(s.key, s, vw, fixed_head_dim);
}

// The value term's updates of the P.V block: channels vectorized, table rows (if any) outermost.
void schedule_value_term_updates(AttentionStages &s, int vw) {
    for (int u = 1; u < s.chunk_acc.num_update_definitions(); u++) {
        if (s.chunk_acc.rvars(u).empty()) {
            s.chunk_acc.update(u).vectorize(s.d, vw, TailStrategy::GuardWithIf);
        } else {
            s.chunk_acc.update(u).reorder(s.d, s.ii, s.rr).vectorize(s.d, vw, TailStrategy::GuardWithIf);
        }
    }
}

// Prefill's q.k in bf16 pairs (Blocking::bf16_dot_products): the QK register block of row vectors x keys
// with each lane a pair of channels (the atomic, vectorized pair inside the row lanes is the pattern Halide
// 14 lowers to vdpbf16ps); the tile's query rows are packed in pairs per task, so a key's pair of channels is
// one 32-bit broadcast.
void schedule_bf16_dot_prefill_qk(AttentionStages &s, const LoopLevel &per_tile, int vw) {
    const TailStrategy guard = TailStrategy::GuardWithIf;
    const std::vector<Var> args = s.query_pairs.args();  // (pair, ii, d_pair, it, h, b)
    s.query_pairs.compute_at(per_tile)
        .bound(args[0], 0, 2)
        .reorder(args[0], args[1], args[2])
        .vectorize(args[0])
        .vectorize(args[1], vw, guard);
    Var row_vec("row_vec"), lanes("lanes");
    s.qk.update()
        .split(s.ii, row_vec, lanes, vw)
        .reorder(s.rd.x, lanes, row_vec, s.jj, s.rd.y)
        .atomic()
        .vectorize(s.rd.x)
        .vectorize(lanes)
        .unroll(row_vec)
        .unroll(s.jj);
}

// Prefill's P.V in bf16 pairs of keys: the P.V register block (rows x a part of d) with each lane of d a pair
// of keys; a chunk's V is interleaved in key pairs (value_pairs) and its probabilities are packed in pairs
// (probs_pairs) once per chunk, so a row's pair of probabilities is one 32-bit broadcast.
void schedule_bf16_dot_prefill_pv(AttentionStages &s, const LoopLevel &per_chunk, int vw, int part_width) {
    const TailStrategy guard = TailStrategy::GuardWithIf;
    const std::vector<Var> prob_args = s.probs_pairs.args();  // (pair, ii, key_pair, c, it, h, b)
    // Pairs unrolled: two contiguous loads whose strided stores Halide merges into one interleaving store
    // (vectorized along the pair, V's clamped key index made every load a gather: 30 % of a 2048^2 call).
    s.probs_pairs.compute_at(per_chunk)
        .bound(prob_args[0], 0, 2)
        .unroll(prob_args[0])
        .vectorize(prob_args[1], vw, guard);
    Var row_vec("row_vec"), lanes("lanes");
    s.sum_weights.compute_at(per_chunk).bound(s.sum_weights.args()[0], 0, 2);
    s.chunk_sum.update()
        .split(s.ii, row_vec, lanes, vw)
        .reorder(s.rs.x, lanes, row_vec, s.rs.y)
        .atomic()
        .vectorize(s.rs.x)
        .vectorize(lanes)
        .unroll(row_vec);
    const std::vector<Var> value_args = s.value_pairs.args();  // (pair, d, key_pair, c, g, b)
    s.value_pairs.compute_at(per_chunk)
        .bound(value_args[0], 0, 2)
        .unroll(value_args[0])
        .vectorize(value_args[1], vw, guard);
    Var d_part("d_part"), d_block("d_block"), d_lane("d_lane");
    s.chunk_acc.update(0)
        .split(s.d, d_part, d_block, part_width)
        .split(d_block, d_block, d_lane, vw)
        .reorder(s.rv.x, d_lane, d_block, s.ii, s.rv.y, d_part)
        .atomic()
        .vectorize(s.rv.x)
        .vectorize(d_lane)
        .unroll(d_block)
        .unroll(s.ii);
}

void schedule_prefill(AttentionStages &s, Func output, const OutputLoops &loops, const CpuScheduleParams &p,
                      bool fixed_head_dim) {
    const int vw = p.vector_width;
    const int tile = p.blocking.query_tile;
    const TailStrategy guard = TailStrategy::GuardWithIf;
    Var row_block("row_block"), row("row"), key_block("key_block"), key("key"), lanes("lanes"), row_vec("row_vec");

    schedule_merge(s, output, loops, vw);

    // Visible key range per row, a vector of rows at a time (the mask is two compares per score).
    for (Func bound : {s.row_key_begin, s.row_key_end})
        bound.compute_at(output, loops.task).vectorize(s.ii, vw, guard);

    // Transformed queries (RoPE, xPos) per tile with channels vectorized: their tables are read
    // contiguously per row. Transforming inside the row-innermost tile below would gather every
    // table entry across rows (16 % of a (1,8,512,512,64) RoPE call); so would a channel vector
    // whose pairing is not a constant (RoPE unspecialized: 12-22 % of a small RoPE call).
    if (s.transforms_query) {
        s.query.compute_at(output, loops.task);
        schedule_transformed_rows(s.query, s, vw, fixed_head_dim);
    }

    // Query rows, stored row-innermost so the QK block loads a vector of rows per channel.
    s.query_tile.compute_at(output, loops.task)
        .reorder_storage(s.ii, s.d, s.it, s.h, s.b)
        .reorder(s.ii, s.d)
        .vectorize(s.ii, vw, guard);

    const bool two_pass = s.blocking.merge == Merge::TwoPass;
    // P.V register block rows: the algorithm's value row group when it has one (its key loop is
    // trimmed per group); otherwise at most 24 accumulator vectors, so a large fixed head_dim gets
    // fewer rows than the tuned (D = 64) value.
    int pv_rows = p.pv_block_rows;
    int pv_part_width = 0;  // channels of d a P.V block covers at a time (a fixed head_dim only)
    if (const auto *fixed = s.head_dim.as<Internal::IntImm>(); fixed_head_dim && fixed) {
        const int head_dim = int(fixed->value);
        const int vectors = std::max(1, head_dim / vw);
        pv_part_width = head_dim % vw == 0 ? pv_part_vectors(vectors) * vw : head_dim;
        pv_rows = pv_rows_for(p, head_dim);
    }
    if (s.blocking.value_row_group > 0) pv_rows = s.blocking.value_row_group;
    const bool rows_in_blocks = two_pass && tile % pv_rows == 0;
    const LoopLevel per_chunk = chunk_level(s);
    if (two_pass) {
        s.chunk_state.compute_at(output, loops.task);
        if (rows_in_blocks) s.chunk_state.split(s.ii, row_block, row, pv_rows);
        s.chunk_state.vectorize(s.d, vw, guard);
    }

    // QK^T register block: (tile rows as vectors) x (qk_block_keys keys), d outermost. A chunk's
    // visible keys come in groups of kVisibleKeyGroup: blocks that divide a group tile them exactly;
    // others shift the last block inwards rather than read keys past the group.
    const bool row_vectors = tile % vw == 0;
    const bool blocks_divide_groups =
        p.blocking.key_chunk % kVisibleKeyGroup == 0 && kVisibleKeyGroup % p.qk_block_keys == 0;
    s.scores.compute_at(per_chunk)
        .split(s.jj, key_block, key, p.qk_block_keys,
               blocks_divide_groups ? TailStrategy::RoundUp : TailStrategy::ShiftInwards)
        .reorder(s.ii, key, key_block);
    if (row_vectors) {
        s.scores.split(s.ii, row_vec, lanes, vw).vectorize(lanes).unroll(row_vec).unroll(key);
    } else {
        s.scores.vectorize(s.ii, vw, guard);
    }
    // The scores' updates over keys of the chunk (the band's, the mask's: Blocking::mask_keys_by_range):
    // keys outermost, rows vectorized.
    auto schedule_key_update = [&](int update, const RDom &keys) {
        if (row_vectors) {
            s.scores.update(update)
                .split(s.ii, row_vec, lanes, vw)
                .reorder(lanes, row_vec, keys)
                .vectorize(lanes)
                .unroll(row_vec);
        } else {
            s.scores.update(update).vectorize(s.ii, vw, guard);
        }
    };
    if (s.table_term_by_band) schedule_key_update(0, s.rk);
    for (const AttentionStages::MaskUpdate &mask : s.mask_updates)
        schedule_key_update(mask.index, mask.keys);
    s.qk.compute_at(s.scores, key_block);
    const bool dot_products = s.query_pairs.defined() && row_vectors && pv_part_width > 0 && rows_in_blocks;
    if (s.query_pairs.defined() && !dot_products)
        throw std::invalid_argument(
            "attngen: prefill's bf16 dot products need tiles of row vectors, a fixed "
            "head_dim and P.V in row blocks");
    // The block's zeros, then its sums over d.
    if (row_vectors) {
        s.qk.split(s.ii, row_vec, lanes, vw).vectorize(lanes).unroll(row_vec).unroll(s.jj);
    } else {
        s.qk.vectorize(s.ii, vw, guard);
    }
    if (dot_products) {
        schedule_bf16_dot_prefill_qk(s, LoopLevel(output, loops.task), vw);
    } else if (row_vectors) {
        s.qk.update()
            .split(s.ii, row_vec, lanes, vw)
            .reorder(lanes, row_vec, s.jj, s.rd)
            .vectorize(lanes)
            .unroll(row_vec)
            .unroll(s.jj);
    } else {
        s.qk.update().reorder(s.ii, s.jj, s.rd).vectorize(s.ii, vw, guard);
    }

    // Softmax statistics of the chunk, vectorized over rows; keys outermost, so the trimmed key
    // range is tested once per key for all row vectors.
    s.chunk_max.compute_at(per_chunk).vectorize(s.ii, vw, guard);
    // With dot products the exponentials go straight into their bf16 pairs, which chunk_sum reads (but for
    // a value-side term, which reads the probabilities again).
    if (!dot_products || s.has_value_term) s.probs.compute_at(per_chunk).vectorize(s.ii, vw, guard);
    s.chunk_sum.compute_at(per_chunk).vectorize(s.ii, vw, guard);
    // (With dot products chunk_sum adds the bf16 pairs: its update is scheduled with P.V's.)
    std::vector<Func> statistics = {s.chunk_max};
    if (!dot_products) statistics.push_back(s.chunk_sum);
    for (Func statistic : statistics) {
        if (row_vectors) {
            statistic.update()
                .split(s.ii, row_vec, lanes, vw)
                .reorder(lanes, row_vec, s.rj)
                .vectorize(lanes)
                .unroll(row_vec);
        } else {
            statistic.update().vectorize(s.ii, vw, guard);
        }
    }

    // P.V register block: pv_block_rows rows x one part of d (all of it unless D is wide), accumulated
    // over the chunk's keys, one part after another.
    Var d_part("d_part"), d_block("d_block"), d_lane("d_lane");
    s.chunk_acc.compute_at(rows_in_blocks ? LoopLevel(s.chunk_state, row_block) : per_chunk).vectorize(s.d, vw, guard);
    if (dot_products) {
        schedule_bf16_dot_prefill_pv(s, per_chunk, vw, pv_part_width);
    } else if (pv_part_width > 0 && rows_in_blocks) {
        s.chunk_acc.update(0)
            .split(s.d, d_part, d_block, pv_part_width)
            .split(d_block, d_block, d_lane, vw)
            .reorder(d_lane, d_block, s.ii, s.rv, d_part)
            .vectorize(d_lane)
            .unroll(d_block)
            .unroll(s.ii);
    } else {
        s.chunk_acc.update(0).reorder(s.d, s.ii, s.rv).vectorize(s.d, vw, guard);
    }
    if (s.blocking.value_row_group > 0) {
        for (Func bound : {s.group_key_begin, s.group_key_end})
            bound.compute_at(output, loops.task);
    }
    if (s.has_value_term) {
        s.value_tails.compute_at(per_chunk).vectorize(s.ii, vw, guard);
        s.value_tails.update().vectorize(s.ii, vw, guard);
        s.value_hist.compute_at(per_chunk).reorder_storage(s.ii, s.r).reorder(s.ii, s.r).vectorize(s.ii, vw, guard);
        schedule_value_term_updates(s, vw);
    }

    // Transformed keys and per-call contractions (DeBERTa's p2c) per (head, batch) pair, before its
    // tiles (such schemes get per-pair tasks: prefill_runs_pair_tasks).
    const LoopLevel per_pair(output, loops.heads);
    schedule_key_transform(s, vw, fixed_head_dim, per_pair);
    schedule_helpers(s, per_pair, LoopLevel(output, loops.task), per_chunk, LoopLevel(s.scores, s.jj), vw,
                     fixed_head_dim);
}

// q.k in bf16 pairs (Blocking::bf16_dot_products, which comes with head blocks): lanes of 2 * vw channels,
// each lane a pair (the atomic, vectorized pair inside the lanes is the pattern Halide 14 lowers to
// vdpbf16ps), summed across lanes once per key. The block's heads share each load of K, and their 4
// horizontal sums form one reduction tree (qk stored head-innermost): AOT, same process, (1,32,1,4096,128)
// bf16 with 8 KV heads, 0.93-0.98x the time of one horizontal sum per head.
void schedule_bf16_dot_qk(AttentionStages &s, const LoopLevel &per_chunk, int vw) {
    s.query_bf16.compute_at(per_chunk).vectorize(s.d, vw, TailStrategy::GuardWithIf);
    RVar outer("outer"), lanes("lanes"), lane("lane"), pair("pair");
    Var lane_v("lane_v");
    Func partial = s.qk.update().split(s.rd, outer, lanes, 2 * vw).split(lanes, lane, pair, 2).rfactor(lane, lane_v);
    partial.compute_at(s.qk, s.jj).vectorize(lane_v).reorder_storage(lane_v, s.ii).unroll(s.ii);
    partial.update()
        .reorder(pair, lane_v, s.ii, outer)
        .atomic()
        .vectorize(pair)
        .vectorize(lane_v)
        .unroll(s.ii)
        .unroll(outer);
    s.qk.reorder_storage(s.ii, s.jj);
    s.qk.update().reorder(lane, s.ii, s.jj).atomic().vectorize(lane).vectorize(s.ii);
}

// P.V in bf16 pairs of keys: each lane of d sums the products of two keys per step (value_pairs holds a
// key pair's V rows interleaved, built per pair from two contiguous loads; the pair's probabilities are
// one 32-bit broadcast). The head block keeps a block of heads x vectors of d (decode_pv_block) in registers.
void schedule_bf16_dot_pv(AttentionStages &s, const LoopLevel &per_chunk, int vw, int head_dim, int block_heads) {
    const TailStrategy guard = TailStrategy::GuardWithIf;
    s.probs_bf16.compute_at(per_chunk).reorder_storage(s.jj, s.ii).reorder(s.jj, s.ii).vectorize(s.jj, vw, guard);
    Var d_part("d_part"), d_block("d_block"), d_lane("d_lane"), head_part("head_part"), head("head");
    RVar key_pair("key_pair"), pair("pair");
    const DecodePvBlock block = decode_pv_block(block_heads, head_dim / vw);
    s.chunk_acc.update(0)
        .split(s.d, d_part, d_block, block.part_vectors * vw)
        .split(d_block, d_block, d_lane, vw)
        .split(s.ii, head_part, head, block.heads)
        .split(s.rv, key_pair, pair, 2)
        .reorder(pair, d_lane, head, d_block, key_pair, d_part, head_part)
        .atomic()
        .vectorize(pair)
        .vectorize(d_lane)
        .unroll(head)
        .unroll(d_block);
    const std::vector<Var> args = s.value_pairs.args();  // (pair, d, key_pair, c, g, b)
    s.value_pairs.compute_at(s.chunk_acc, key_pair).bound(args[0], 0, 2).unroll(args[0]).vectorize(args[1], vw, guard);
}

// Decode with a fixed head_dim rotates keys (RoPE, xPos) inside the QK dot product, channel vectors
// unrolled so each one's pairing is a constant: no rotated copy of the chunk is written and read back
// (JIT, (1,32,1,4096,128), same process: RoPE and xPos 2-11 % faster). A key rotation
// (Scheme::key_rotation) is applied there as the query's transposed rotation (key_rotation_in_product),
// also to bf16 keys (attention_pipeline: with one head a task it measured 14 % slower for interleaved
// RoPE, with multi-head tasks 0.53-0.78x the time). Where query heads share KV heads (the variant's
// copy for GQA, see head_sharing_split) fp32 keys are transformed inline in the head block's q.k, which
// reads each key vector once for the block's heads (JIT, (1,32,1,4096,128) with 8 KV heads, L3 flushed, same
// process, 11 rounds, causal: RoPE half 0.98x, interleaved 0.88x, xPos 0.92x the time of a rotated copy
// per chunk); bf16 keys keep that copy.
bool rotates_keys_in_dot_product(const AttentionStages &s, bool fixed_head_dim) {
    return s.key_rotation_in_product || (s.transforms_key && fixed_head_dim && s.key_storage == Float(32));
}

void schedule_decode(AttentionStages &s, Func output, const OutputLoops &loops, const CpuScheduleParams &p,
                     bool fixed_head_dim) {
    const int vw = p.vector_width;
    const TailStrategy guard = TailStrategy::GuardWithIf;
    const bool rotate_in_dot_product = rotates_keys_in_dot_product(s, fixed_head_dim);
    const bool head_group_tasks = decode_tasks_run_head_groups(p);
    const int head_block = s.blocking.head_block;
    // Keys read in interleaved runs (see kMultiHeadDecodeKeyRuns): chunks of a fixed key count only.
    const bool bf16_keys_rotated_in_product = rotate_in_dot_product && s.key_storage == BFloat(16);
    const int runs = head_block > 1                 ? std::max(p.grouped_decode_key_runs, 1)
                     : bf16_keys_rotated_in_product ? 1
                                                    : kMultiHeadDecodeKeyRuns;
    const bool key_runs = runs > 1 && !s.blocking.trim_chunk_keys && s.blocking.key_chunk % runs == 0;
    const int run_keys = s.blocking.key_chunk / runs;
    Var run("run"), run_key("run_key");
    RVar value_run("value_run"), value_run_key("value_run_key");
    schedule_merge(s, output, loops, vw);

    // per_chunk: a chunk of one head; per_group_chunk: a chunk of all the task's heads.
    LoopLevel per_chunk = chunk_level(s), per_group_chunk = chunk_level(s), per_tile(output, loops.task);
    if (s.blocking.merge == Merge::TwoPass && p.split_keys) {
        // Split-K: every (key chunk, query row, head, batch) is one task of one flat parallel loop;
        // the merge then runs per output row. The query heads that share a KV head (GQA, MQA) are
        // innermost, so they run one after another on the chunk the first one brought into cache;
        // then the chunks. JIT, (1,32,1,4096,128) causal, same process: 8 KV heads 1.22x, 1 KV head
        // 1.62x faster than chunks innermost; 32 (MHA: groups of one head) the same order as before.
        Var work("work"), kv_group("kv_group"), group_head("group_head");
        s.chunk_state.compute_root()
            .split(s.h, kv_group, group_head, s.heads / s.kv_heads, TailStrategy::GuardWithIf)
            .reorder(s.d, s.ii, group_head, s.c, kv_group, s.it, s.b)
            .fuse(group_head, s.c, work)
            .fuse(work, kv_group, work)
            .fuse(work, s.it, work)
            .fuse(work, s.b, work)
            .parallel(work)
            .vectorize(s.d, vw, guard);
        per_chunk = per_group_chunk = LoopLevel(s.chunk_state, work);
        per_tile = per_chunk;  // a tile is one row: its per-tile stages are recomputed per chunk
        s.query_tile.compute_at(per_chunk).vectorize(s.d, vw, guard);
        for (const Expr &condition : s.transform_specializations)
            s.query_tile.specialize(condition);
    } else {
        // A task's heads (schedule_output_cpu: the query heads of one KV group) take turns on each key
        // chunk while the chunk is in the core's L2.
        if (head_group_tasks) {
            s.chunk_state.compute_at(output, loops.task).reorder(s.d, s.ii, s.h, s.c).vectorize(s.d, vw, guard);
            per_chunk = LoopLevel(s.chunk_state, s.h);
        }
        s.query_tile.compute_at(output, loops.task).vectorize(s.d, vw, guard);
    }
    // The query's signed pair partners (key_rotation_in_product) beside the query row.
    if (s.key_rotation_in_product) s.query_partner.compute_at(per_tile).vectorize(s.d, vw, guard);

    // A block's heads are rows of keys: each stored and computed a vector of keys at a time.
    if (head_block > 1) {
        for (Func per_key : {s.qk, s.scores, s.probs})
            per_key.reorder_storage(s.jj, s.ii).reorder(s.jj, s.ii);
    }
    // One query row: scores are dot products over d, a vector of channels at a time reduced once
    // per key; the chunk's max and sum reduce a vector of keys at a time.
    s.scores.compute_at(per_chunk).vectorize(s.jj, vw, guard);
    // Folded edge rows: each chunk's query beside the chunk, per head; a chunk that meets the band
    // adds the term a vector of keys at a time, its per-score dot products (the key_table's) there.
    LoopLevel per_score(s.scores, s.jj);
    if (s.folds_edge_rows) {
        s.chunk_query.compute_at(per_chunk).vectorize(s.d, vw, guard);
        RVar key_block("band_key_block"), key_lane("band_key_lane");
        s.scores.update(0).split(s.rk, key_block, key_lane, vw, guard).vectorize(key_lane);
        per_score = LoopLevel(s.scores, key_block);
    }
    // (A group's heads rotating keys in their own dot products once took turns on 16-key blocks to share
    // K and table rows in L1; the grouped-query copy rotates in the head block's q.k instead (bf16 keys:
    // per chunk), and with groups of one head the blocks measured the same as none: JIT, (1,32,1,4096,128),
    // 0.93-1.06x.)
    s.qk.compute_at(per_chunk).vectorize(s.jj, vw, guard);
    RVar outer("outer"), lane("lane");
    if (fixed_head_dim && s.bf16_dot_products) {
        // bf16 dot products: each lane sums a pair of channels per step (pair atomic and vectorized inside
        // the lanes: the pattern Halide lowers to vdpbf16ps), then the lanes once per key.
        schedule_bf16_dot_qk(s, per_chunk, vw);
    } else if (fixed_head_dim) {
        Var lane_v("lane_v");
        Func partial = s.qk.update().split(s.rd, outer, lane, vw).rfactor(lane, lane_v);
        if (key_runs) {
            // (Not unrolled: where a scheme's scores need q.k on part of the chunk only, the
            // runs' count varies. JIT, as above: unrolled 0.98x the time.)
            s.qk.update()
                .split(s.jj, run, run_key, run_keys, TailStrategy::GuardWithIf)
                .reorder(lane, s.ii, run, run_key);
            partial.compute_at(s.qk, run).vectorize(lane_v);
        } else {
            partial.compute_at(s.qk, s.jj).vectorize(lane_v);
        }
        partial.update().vectorize(lane_v);
        s.qk.update().atomic().vectorize(lane);
        if (head_block > 1) {
            // A block's heads take each vector of the key's channels in turn: one load of K serves them all.
            partial.reorder_storage(lane_v, s.ii).unroll(s.ii);
            partial.update().reorder(lane_v, s.ii, outer).unroll(s.ii).unroll(outer);
        }
        if (rotate_in_dot_product) {
            partial.update().unroll(outer);
            for (const Expr &condition : s.transform_specializations)
                partial.update().specialize(condition);
        }
    } else {
        s.qk.update().unscheduled();  // generic head_dim: a plain dot product per key
    }
    s.chunk_max.compute_at(per_chunk);
    s.probs.compute_at(per_chunk).vectorize(s.jj, vw, guard);
    s.chunk_sum.compute_at(per_chunk);
    if (!s.blocking.trim_chunk_keys && s.blocking.key_chunk % vw == 0) {
        s.chunk_max.update().split(s.rj, outer, lane, vw).atomic().vectorize(lane);
        s.chunk_sum.update().split(s.rj, outer, lane, vw).atomic().vectorize(lane);
    }
    s.chunk_acc.compute_at(per_chunk).vectorize(s.d, vw, guard);
    Var d_block("d_block"), d_lane("d_lane");
    const auto *fixed_dim = s.head_dim.as<Internal::IntImm>();
    if (fixed_head_dim && s.value_pairs.defined() && fixed_dim && fixed_dim->value % vw == 0) {
        schedule_bf16_dot_pv(s, per_chunk, vw, int(fixed_dim->value), std::max(head_block, 1));
    } else if (fixed_head_dim && head_block > 1 && fixed_dim && fixed_dim->value % vw == 0) {
        // A block's heads take each V vector in turn (a block of heads x vectors accumulates in registers
        // over the chunk's keys: decode_pv_block).
        Var d_part("d_part"), head_part("head_part"), head("head");
        const DecodePvBlock block = decode_pv_block(head_block, int(fixed_dim->value) / vw);
        s.chunk_acc.update(0)
            .split(s.d, d_part, d_block, block.part_vectors * vw)
            .split(d_block, d_block, d_lane, vw)
            .split(s.ii, head_part, head, block.heads)
            .reorder(d_lane, head, d_block, s.rv, d_part, head_part)
            .vectorize(d_lane)
            .unroll(head)
            .unroll(d_block);
        if (key_runs) {
            s.chunk_acc.update(0)
                .split(s.rv, value_run, value_run_key, run_keys)
                .reorder(d_lane, head, d_block, value_run, value_run_key, d_part, head_part)
                .unroll(value_run);
        }
    } else if (fixed_head_dim) {
        s.chunk_acc.update(0)
            .split(s.d, d_block, d_lane, vw)
            .reorder(d_lane, d_block, s.ii, s.rv)
            .vectorize(d_lane)
            .unroll(d_block);
        if (key_runs) {
            s.chunk_acc.update(0)
                .split(s.rv, value_run, value_run_key, run_keys)
                .reorder(d_lane, d_block, s.ii, value_run, value_run_key)
                .unroll(value_run);
        }
    } else {
        s.chunk_acc.update(0).reorder(s.d, s.ii, s.rv).vectorize(s.d, vw, guard);
    }
    if (s.has_value_term) {
        s.value_tails.compute_at(per_chunk);
        s.value_hist.compute_at(per_chunk);
        schedule_value_term_updates(s, vw);
    }

    // Otherwise keys are rotated per chunk, once for all the task's heads.
    if (!rotate_in_dot_product) schedule_key_transform(s, vw, fixed_head_dim, per_group_chunk);
    schedule_helpers(s, per_tile, per_tile, per_chunk, per_score, vw, fixed_head_dim, /*contractions_per_score=*/true);
}

}  // namespace

bool prefill_runs_pair_tasks(const AttentionStages &s) {
    // A per-call table computed per pair stays in the core's L2 while the pair's tiles read it per
    // score; computed for every pair first (17 MB at (4,8,256,256,64) for DeBERTa's p2c) the tiles read
    // it back from memory. JIT, same process, DeBERTa (with the band's unclamped table reads): 0.73-0.91x
    // the time at 4x256^2, 512^2, (1,16,1024,1024,128) and 2048^2 causal.
    const bool per_call_contraction = std::any_of(s.helpers.begin(), s.helpers.end(), [](const HelperStage &helper) {
        return helper.is_contraction && !helper.per_score && helper.placement == Placement::PerCall;
    });
    return s.transforms_key || per_call_contraction;
}

HeadSharingSplit head_sharing_split(const Target &target, ShapeClass shape, const CpuScheduleParams &cpu) {
    if (target.has_gpu_feature() || shape != ShapeClass::Decode || !decode_tasks_run_head_groups(cpu)) return nullptr;
    // Head-group decode tasks: every fixed-head_dim variant gets a grouped-query copy whose tiles are blocks
    // of query heads of one KV group (Blocking::head_block), so each key and value a chunk loads serves the
    // block; it rotates keys (RoPE, xPos) once for the block's heads (schedule_decode). AOT, same
    // process, 61 alternating calls, (1,32,1,4096,128) with 8 KV heads, time with blocks of 4 over one head a
    // tile, causal / none (2026-12-03, beside a CI build): bf16 plain 0.77 / 0.76, ALiBi 0.74 / 0.72, T5
    // 0.77 / 0.74, Shaw 0.83 / 0.83, DeBERTa 0.87 / 0.63, xPos 0.93 / 0.95, RoPE 0.99-1.01; fp32 (memory-bound,
    // noisy) plain 0.73 / 1.06, ALiBi 0.87 / 1.13, T5 0.83 / 0.77, RoPE 0.90-0.96, xPos 0.99, DeBERTa 1.04 /
    // 0.87, Shaw 0.81 / 1.07. Outputs equal to the last bit for all but Shaw and DeBERTa fp32 (2e-7, 4e-9).
    const Blocking blocking = cpu_algorithm_blocking(cpu, shape);
    const bool head_blocks = blocking.head_block > 1;
    // Multi-head decode in chunks of multi_head_key_chunk keys, but where P.V adds a value term (see
    // define_attention_pipeline) or a chunk that meets a table's band pays per score (folded edge rows:
    // DeBERTa took 9x the time in 4096-key chunks). RoPE and xPos take it too, though a head then reads the
    // call's cos/sin rows for all its keys from L3 rather than a chunk's from L2, shared by the task's heads
    // in turn. Bench binaries A B B A, 4 rounds, (1,32,1,4096,128), causal / none, time with the copy over
    // without: fp32 RoPE half 0.89 / 0.92 (1.24 / 1.17 -> 1.06 / 1.06 plain's time, paired), xPos 0.97 /
    // 0.94, interleaved 1.02 / 1.02 (1.17 / 1.16 -> 1.21 / 1.34 plain's time: a loss); bf16, 2 rounds, RoPE
    // half 0.87 / 0.90, interleaved 0.90 / 0.90, xPos 0.91 / 0.91 (2026-12-07).
    const bool multi_head_chunks = blocking.multi_head_key_chunk > 0;
    return [head_blocks, multi_head_chunks](const AttentionStages &s) {
        HeadSharingCopies copies;
        copies.shared_kv_heads = head_blocks || rotates_keys_in_dot_product(s, /*fixed_head_dim=*/true);
        copies.multi_head = multi_head_chunks && !s.has_value_term && !s.folds_edge_rows;
        return copies;
    };
}

void schedule_variant_cpu(AttentionStages &s, Func output, const OutputLoops &loops, const CpuScheduleParams &params,
                          ShapeClass shape, bool fixed_head_dim) {
    if (shape == ShapeClass::Prefill) {
        schedule_prefill(s, output, loops, params, fixed_head_dim);
    } else {
        schedule_decode(s, output, loops, params, fixed_head_dim);
    }
    chunk_temporaries_on_stack(s, fixed_head_dim);
}

}  // namespace attngen
