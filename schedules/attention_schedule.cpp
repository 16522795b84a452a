#include "attention_schedule.h"

namespace attngen {

namespace {

constexpr int kMaxRotatingHeadsPerTask = 8;

// Halide 14 passes host-computed scalar bools (and other 8-bit values) to OpenCL kernels as uchar arguments that
// arrive as 0 (seen on PoCL: a kernel guarded by `mask_kind == 0` saw false). Widen every scalar
// bool let to int32 before the kernels take their arguments; uses compare it against 0.
class WidenBoolLets : public Halide::Internal::IRMutator {
    using IRMutator::visit;

    Halide::Internal::Stmt visit(const Halide::Internal::LetStmt *op) override {
        using namespace Halide::Internal;
        if (!op->value.type().is_bool() || !op->value.type().is_scalar()) return IRMutator::visit(op);
        const std::string wide_name = op->name + "_i32";
        Halide::Expr wide = Variable::make(Halide::Int(32), wide_name);
        Stmt body = substitute(op->name, NE::make(wide, make_zero(Halide::Int(32))), op->body);
        return LetStmt::make(wide_name, Cast::make(Halide::Int(32), mutate(op->value)), mutate(body));
    }
};

}  // namespace

void schedule_attention(AttentionPipeline &pipeline, const Halide::Target &target, ShapeClass shape,
                        const CpuScheduleParams &cpu, const GpuScheduleParams &gpu, const Halide::Expr &threads) {
    const bool on_gpu = target.has_gpu_feature();
    // The threads get an even share of `tasks` (or enough of them that a remainder does not matter).
    const Halide::Expr pool = Halide::max(threads, 1);
    auto shares_evenly = [&](const Halide::Expr &tasks) { return tasks % pool == 0 || tasks >= 4 * pool; };
    // CPU prefill of a scheme that transforms keys (RoPE, xPos) or has a per-call table (DeBERTa's p2c):
    // one task per (head, batch) pair, which transforms the pair's keys (computes its table) and then
    // runs its query tiles in order while they are in the core's cache. Where the pairs do not share
    // out evenly over the threads, the pair's tiles become nested parallel tasks of one tile each.
    // (Plain attention keeps (tile, head, batch) tasks: this order took 1.03-1.07x the time, JIT, same
    // process, 4x256^2, 512^2 and (1,16,1024,1024,128).)
    Halide::Expr tiles_per_task;
    if (!on_gpu && shape == ShapeClass::Prefill && prefill_runs_pair_tasks(pipeline.variants.front())) {
        const AttentionStages &first = pipeline.variants.front();
        const Halide::Expr pairs = first.heads * first.batch;
        const Halide::Expr tiles = (first.q_len + cpu.blocking.query_tile - 1) / cpu.blocking.query_tile;
        tiles_per_task = Halide::select(shares_evenly(pairs), tiles, 1);
    }
    // CPU decode with one task per query row: a task runs query heads that share a KV head (GQA, MQA),
    // so each key chunk is read from memory once per task (schedule_decode). The whole group, or
    // the largest power-of-two part of it that gives the threads an even share of tasks.
    Halide::Expr heads_per_task;
    if (!on_gpu && shape == ShapeClass::Decode && decode_tasks_run_head_groups(cpu)) {
        const AttentionStages &first = pipeline.variants.front();
        const Halide::Expr group = first.heads / first.kv_heads;
        // Where a head block divides the group (its copy runs), a task keeps whole blocks.
        const int block = cpu_algorithm_blocking(cpu, shape).head_block;
        // One head per task (one block of heads), if nothing better.
        Halide::Expr parts = block > 1 ? Halide::select(group % block == 0, group / block, group) : group;
        for (int p = 32; p >= 1; p /= 2) {
            const Halide::Expr tasks = first.kv_heads * first.batch * p;
            const Halide::Expr keeps_blocks =
                block > 1 ? group % block != 0 || (group / p) % block == 0 : Halide::Internal::const_true();
            parts = Halide::select(group % p == 0 && keeps_blocks && shares_evenly(tasks), p, parts);
        }
        heads_per_task = Halide::max(group / parts, 1);
        // Multi-head attention whose q.k rotates keys (RoPE, xPos; a fixed head_dim): a task
        // runs up to kMaxRotatingHeadsPerTask heads, which take turns on each key chunk, so all but the
        // first read the chunk's rows of the per-call cos/sin table from the core's L2. With one head a
        // task, each head reads the whole table from L3 (64 MiB at (1,32,1,4096,128), as much as its
        // keys). JIT, Intel Xeon (family 6 model 207), (1,32,1,4096,128), L3 flushed, same process: 8
        // heads a task took 0.87x (RoPE half pairs), 0.91x (interleaved), 0.92x (xPos) the time of one;
        // 16 the same as 8. (The table in L1 would give 0.83x; blocks of 32 keys taken in turn by the
        // heads, q.k stored for all of them, measured 0.99-1.01x of whole chunks in turn.) Variants that
        // rotate a chunk's keys into a copy keep one head a task: the copy would hold every head's keys.
        Halide::Expr rotates_in_product = Halide::Internal::const_false();
        for (size_t n = 0; n < pipeline.variants.size(); n++) {
            if (pipeline.variants[n].key_rotation_in_product)
                rotates_in_product = rotates_in_product || pipeline.head_dim == pipeline.head_dims[n];
        }
        if (!Halide::Internal::is_const_zero(rotates_in_product)) {
            Halide::Expr heads_for_table = 1;
            for (int p = 2; p <= kMaxRotatingHeadsPerTask; p *= 2) {
                const Halide::Expr tasks = first.heads * first.batch / p;
                heads_for_table = Halide::select(first.heads % p == 0 && shares_evenly(tasks), p, heads_for_table);
            }
            heads_per_task = Halide::select(group == 1 && rotates_in_product, heads_for_table, heads_per_task);
        }
    }
    OutputLoops loops = on_gpu ? schedule_output_gpu(pipeline.output, gpu, shape)
                               : schedule_output_cpu(pipeline.output, cpu, shape, tiles_per_task, heads_per_task);
    for (size_t n = 0; n < pipeline.variants.size(); n++) {
        const bool fixed = pipeline.head_dims[n] > 0;
        if (on_gpu) {
            schedule_variant_gpu(pipeline.variants[n], pipeline.output, loops, gpu, shape, fixed);
        } else {
            schedule_variant_cpu(pipeline.variants[n], pipeline.output, loops, cpu, shape, fixed);
        }
    }
    // The branches in the order of the output's selects (define_attention_pipeline): MultiHead, then
    // SharedKvHeads, then the copy of one query head per tile.
    auto has_copy = [&](size_t n, HeadSharing sharing) {
        for (size_t copy = n + 1; copy < pipeline.variants.size() && pipeline.head_dims[copy] == pipeline.head_dims[n];
             copy++) {
            if (pipeline.variants[copy].head_sharing == sharing) return true;
        }
        return false;
    };
    for (size_t n = 0; n < pipeline.variants.size(); n++) {
        const int fixed = pipeline.head_dims[n];
        if (fixed <= 0 || is_head_sharing_copy(pipeline.variants[n].head_sharing)) continue;
        Halide::Stage branch = pipeline.output.specialize(pipeline.head_dim == fixed);
        if (has_copy(n, HeadSharing::MultiHead)) branch.specialize(pipeline.multi_head);
        if (has_copy(n, HeadSharing::SharedKvHeads)) branch.specialize(pipeline.kv_heads_shared);
    }
    if (pipeline.head_dims.back() != 0) pipeline.output.specialize_fail("attngen: no variant for this head_dim");
}

void add_gpu_lowering_fixes(Halide::Pipeline pipeline, const Halide::Target &target) {
    if (target.has_gpu_feature()) pipeline.add_custom_lowering_pass(new WidenBoolLets);
}

}  // namespace attngen
