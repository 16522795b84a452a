// Schedules for the fused attention algorithm (generators/attention_algorithm.h). No math here:
// only where and how each stage of the algorithm is computed.
#pragma once

#include "../generators/attention_pipeline.h"

#include <Halide.h>

#include <string>
#include <vector>

namespace attngen {

enum class ShapeClass { Prefill, Decode };

ShapeClass parse_shape_class(const std::string &name);
const char *shape_class_name(ShapeClass shape);

// Tunable parameters of the CPU schedule (schedules/tuned/*.json holds tuned values).
struct CpuScheduleParams {
    Blocking blocking{32, 256};
    int vector_width = 16;    // f32 lanes per vector
    int qk_block_keys = 8;    // keys per QK register block (unrolled)
    int pv_block_rows = 4;    // rows per P.V register block (unrolled)
    bool split_keys = false;  // decode: parallel over key chunks as well as heads
    // Decode with head-group tasks: query heads per tile where they share a KV head (Blocking::head_block).
    int decode_head_block = 4;
    // Decode with fp32 dot products in grouped-query head blocks: a chunk's keys and values are read as
    // this many interleaved runs (1: in order). Which is faster depends on the core (cpu_attention.cpp).
    int grouped_decode_key_runs = 4;
};

// Tunable parameters of the GPU schedule.
struct GpuScheduleParams {
    Blocking blocking{16, 64};
    int threads_d = 16;  // threads over channels in the P.V stage
    // Scores each thread computes, keys x rows: a register tile of the Q.K product (1 x 1: none).
    int qk_tile_keys = 1, qk_tile_rows = 1;
    // Outputs each thread accumulates in P.V, channels x rows, in registers (1 x 1: in shared memory).
    // Fixed head dims only (the channel tile must divide D).
    int pv_tile_d = 1, pv_tile_rows = 1;
};

CpuScheduleParams default_cpu_params(ShapeClass shape);
// CPU decode without split-K runs one task per query row over the query heads of a KV group (or part
// of one): schedule_attention sizes the group, schedule_decode orders its loops.
inline bool decode_tasks_run_head_groups(const CpuScheduleParams &params) {
    return !params.split_keys && params.blocking.merge == Merge::TwoPass;
}
// The blocking the algorithm is defined with for a CPU schedule: `params.blocking` plus what the
// schedule's register blocks imply (P.V's value row group).
Blocking cpu_algorithm_blocking(const CpuScheduleParams &params, ShapeClass shape);
GpuScheduleParams default_gpu_params(ShapeClass shape, const Halide::Target &target);

// The loops of the output Func at which variant stages are computed.
struct OutputLoops {
    Halide::Var task{"task"};            // CPU: one query tile of one (head, batch)
    Halide::Var tile_run{"tile_run"};    // CPU with tiles_per_task: a run of a pair's tiles
    Halide::Var tile{"tile"};            // query tile (GPU block)
    Halide::Var heads{"hb"};             // fused head x batch (GPU block; CPU with tiles_per_task: the pair task)
    Halide::Var task_head{"task_head"};  // CPU with heads_per_task: a head of the task's group
};

// CPU: the output is split into query tiles; (tile, head, batch) tasks run in parallel, or with
// `tiles_per_task` (defined: prefill of a scheme that transforms keys), (head, batch) pairs do, and
// inside them runs of that many tiles, each run in order (a pair's tiles in one run, or one tile a
// run where the pairs are too few for the threads; see schedule_attention). With `heads_per_task`
// (defined: decode with one task per row), a task is one tile of that many consecutive heads.
OutputLoops schedule_output_cpu(Halide::Func output, const CpuScheduleParams &params, ShapeClass shape,
                                const Halide::Expr &tiles_per_task, const Halide::Expr &heads_per_task);
// `fixed_head_dim`: the variant's head_dim is a compile-time constant (D fast path: register blocks unrolled).
void schedule_variant_cpu(AttentionStages &s, Halide::Func output, const OutputLoops &loops,
                          const CpuScheduleParams &params, ShapeClass shape, bool fixed_head_dim);

// GPU (CUDA, OpenCL): blocks over (query tile, head x batch), threads over the tile.
OutputLoops schedule_output_gpu(Halide::Func output, const GpuScheduleParams &params, ShapeClass shape);
void schedule_variant_gpu(AttentionStages &s, Halide::Func output, const OutputLoops &loops,
                          const GpuScheduleParams &params, ShapeClass shape, bool fixed_head_dim);

// Schedules a whole pipeline for `target`: CPU or GPU loops for every variant, then one
// specialization per fixed head_dim so each branch runs exactly one variant. `threads`: the
// caller's thread-pool size at run time (a kernel input), which picks the CPU parallel loops.
void schedule_attention(AttentionPipeline &pipeline, const Halide::Target &target, ShapeClass shape,
                        const CpuScheduleParams &cpu, const GpuScheduleParams &gpu, const Halide::Expr &threads);

// Whether CPU prefill runs one task per (head, batch) pair, its query tiles in order: for schemes that
// transform keys (RoPE, xPos) or compute a per-call table (DeBERTa's p2c), once per pair.
bool prefill_runs_pair_tasks(const AttentionStages &s);

// The variants a schedule wants in two copies, for multi-head and for grouped-query attention
// (define_attention_pipeline's `split_head_sharing`); null when none.
HeadSharingSplit head_sharing_split(const Halide::Target &target, ShapeClass shape, const CpuScheduleParams &cpu);

// Target fixes applied during lowering (Halide 14 GPU kernel-argument workaround); call from a
// generator's schedule() with its pipeline.
void add_gpu_lowering_fixes(Halide::Pipeline pipeline, const Halide::Target &target);

}  // namespace attngen
