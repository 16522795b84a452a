#include "attention_schedule.h"

namespace attngen {

namespace {

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
                        const CpuScheduleParams &cpu, const GpuScheduleParams &gpu) {
    const bool on_gpu = target.has_gpu_feature();
    OutputLoops loops =
        on_gpu ? schedule_output_gpu(pipeline.output, gpu, shape) : schedule_output_cpu(pipeline.output, cpu, shape);
    for (size_t n = 0; n < pipeline.variants.size(); n++) {
        const bool fixed = pipeline.head_dims[n] > 0;
        if (on_gpu) {
            schedule_variant_gpu(pipeline.variants[n], pipeline.output, loops, gpu, shape, fixed);
        } else {
            schedule_variant_cpu(pipeline.variants[n], pipeline.output, loops, cpu, shape, fixed);
        }
    }
    // CPU prefill decides its parallel loops per head_dim branch (a specialization copies the schedule
    // made before it, so each branch gets its own).
    const bool parallel_per_branch = !on_gpu && shape == ShapeClass::Prefill;
    const Halide::Expr pairs = pipeline.variants.front().heads * pipeline.variants.front().batch;
    for (int fixed : pipeline.head_dims) {
        if (fixed == 0) continue;
        Halide::Stage branch = pipeline.output.specialize(pipeline.head_dim == fixed);
        if (parallel_per_branch) parallelize_output_cpu(branch, loops, cpu, pairs);
    }
    if (pipeline.head_dims.back() != 0) {
        pipeline.output.specialize_fail("attngen: no variant for this head_dim");
    } else if (parallel_per_branch) {
        parallelize_output_cpu(pipeline.output, loops, cpu, pairs);
    }
}

void add_gpu_lowering_fixes(Halide::Pipeline pipeline, const Halide::Target &target) {
    if (target.has_gpu_feature()) pipeline.add_custom_lowering_pass(new WidenBoolLets);
}

}  // namespace attngen
