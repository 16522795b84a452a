// The attention generator: one kernel per (scheme, scheme options, shape class, target).
// It never names a scheme: the scheme's inputs and hooks come from the registry.
#include "../schedules/attention_schedule.h"
#include "attention_pipeline.h"

#include <sstream>

namespace attngen {
namespace {

using namespace Halide;

std::vector<int> parse_int_list(const std::string &text) {
    std::vector<int> values;
    std::stringstream in(text);
    std::string item;
    while (std::getline(in, item, ',')) {
        if (!item.empty()) values.push_back(std::stoi(item));
    }
    return values;
}

Merge parse_merge(const std::string &name) {
    if (name == "twopass") return Merge::TwoPass;
    if (name == "online") return Merge::Online;
    throw std::runtime_error("attngen: merge must be twopass or online, got '" + name + "'");
}

class AttentionGenerator : public Generator<AttentionGenerator> {
public:
    GeneratorParam<std::string> scheme{"scheme", "sdpa"};
    GeneratorParam<std::string> scheme_options{"scheme_options", ""};
    GeneratorParam<std::string> shape_class{"shape_class", "prefill"};
    GeneratorParam<std::string> fast_head_dims{"fast_head_dims", "64,128"};
    // Also the generic head_dim path. The build makes one kernel per fast head_dim without it and
    // one generic kernel (cmake/AttngenKernels.cmake): Halide 14 lowers variants that share a
    // pipeline in time superlinear in their number (DeBERTa prefill, AVX-512: 218 s for generic + 64
    // + 128 in one pipeline, 64 s for the three apart).
    GeneratorParam<bool> generic_head_dim{"generic_head_dim", true};
    // Fast paths of an x86 CPU target without AVX2 (pre-2013 CPUs): the fallback of the multi-target
    // library. "0": none, the generic path only, which generates ~8x faster than 64 and 128 do.
    GeneratorParam<std::string> fallback_fast_head_dims{"fallback_fast_head_dims", "0"};
    // Schedule parameters; 0 keeps the default of the shape class (schedules/tuned files set them).
    GeneratorParam<int> query_tile{"query_tile", 0};
    GeneratorParam<int> key_chunk{"key_chunk", 0};
    GeneratorParam<int> qk_block_keys{"qk_block_keys", 0};
    GeneratorParam<int> pv_block_rows{"pv_block_rows", 0};
    GeneratorParam<int> vector_width{"vector_width", 0};
    GeneratorParam<int> split_keys{"split_keys", -1};
    GeneratorParam<int> trim_chunk_keys{"trim_chunk_keys", -1};
    GeneratorParam<int> grouped_decode_key_runs{"grouped_decode_key_runs", 0};
    // key_chunk multiplier of bf16 kernels (Blocking::bf16_key_chunk_scale).
    GeneratorParam<int> bf16_key_chunk_scale{"bf16_key_chunk_scale", 1};
    GeneratorParam<int> gpu_threads_d{"gpu_threads_d", 0};
    GeneratorParam<int> gpu_qk_tile_keys{"gpu_qk_tile_keys", 0};
    GeneratorParam<int> gpu_qk_tile_rows{"gpu_qk_tile_rows", 0};
    GeneratorParam<int> gpu_pv_tile_d{"gpu_pv_tile_d", 0};
    GeneratorParam<int> gpu_pv_tile_rows{"gpu_pv_tile_rows", 0};
    // Merge of the key chunks: twopass (default) or online; empty keeps the schedule's choice.
    GeneratorParam<std::string> merge{"merge", ""};

    // Element type of q, k, v and the output: f32, or bf16 (storage only: fp32 math, fp32 softmax).
    GeneratorParam<std::string> dtype{"dtype", "f32"};

    Input<Buffer<>> q{"q", 4};
    Input<Buffer<>> k{"k", 4};
    Input<Buffer<>> v{"v", 4};
    Input<Buffer<int32_t>> kv_len{"kv_len", 1};
    Input<float> scale{"scale"};
    Input<int32_t> mask_kind{"mask_kind"};
    Input<int32_t> window{"window"};
    // The caller's thread-pool size (the runtime supplies it): CPU schedules pick parallel loops by it.
    Input<int32_t> threads{"threads"};
    Output<Buffer<>> out{"out", 4};

    void configure() {
        const Type element = element_type();
        for (Input<Buffer<>> *input : {&q, &k, &v})
            input->set_type(element);
        out.set_type(element);
        std::unique_ptr<Scheme> probe = make_scheme(scheme, parse_scheme_options(scheme_options));
        for (const InputSpec &spec : probe->inputs()) {
            if (spec.dimensions == 0) {
                scalar_inputs_.push_back({spec.name, add_input<Expr>(spec.name, spec.type)});
            } else {
                const Type type = spec.element_typed ? element : spec.type;
                buffer_inputs_.push_back({spec, add_input<Buffer<>>(spec.name, type, spec.dimensions)});
            }
        }
    }

    void generate() {
        AttentionBindings bindings{q, k, v, kv_len, scale, mask_kind, window, {}};
        for (auto &entry : buffer_inputs_) {
            bindings.scheme_inputs.buffers.emplace(entry.first.name, ImageParam(*entry.second));
            bindings.scheme_inputs.channel_dims[entry.first.name] = entry.first.channel_dim;
        }
        for (auto &entry : scalar_inputs_)
            bindings.scheme_inputs.scalars.emplace(entry.first, Expr(*entry.second));
        Blocking blocking = get_target().has_gpu_feature()
                                ? cpu_params().blocking
                                : cpu_algorithm_blocking(cpu_params(), parse_shape_class(shape_class));
        // bf16 on avx512_bf16's dot products where the target has them (Halide 14 enables them with
        // avx512_sapphirerapids; the build compiles such kernels without AVX512-FP16, see
        // cmake/AttngenKernels.cmake).
        blocking.bf16_dot_products =
            !get_target().has_gpu_feature() && get_target().has_feature(Target::AVX512_SapphireRapids);
        const HeadSharingSplit split =
            auto_schedule ? nullptr : head_sharing_split(get_target(), parse_shape_class(shape_class), cpu_params());
        pipeline_ = define_attention_pipeline(bindings, scheme, parse_scheme_options(scheme_options), blocking,
                                              target_fast_head_dims(), generic_head_dim, split);
        out = pipeline_.output;
    }

    void schedule() {
        // Dense inputs (d innermost, zero-based) and an output shaped like q; the runtime packs
        // other strides before calling.
        for (Input<Buffer<>> *input : {&q, &k, &v}) {
            input->dim(0).set_min(0).set_stride(1);
            for (int dim = 1; dim < 4; dim++)
                input->dim(dim).set_min(0);
        }
        out.dim(0).set_min(0).set_stride(1).set_extent(q.dim(0).extent());
        for (int dim = 1; dim < 4; dim++)
            out.dim(dim).set_min(0).set_extent(q.dim(dim).extent());
        kv_len.dim(0).set_min(0);

        set_estimates();
        if (auto_schedule) return;
        const ShapeClass shape = parse_shape_class(shape_class);
        GpuScheduleParams gpu = default_gpu_params(shape, get_target());
        if (gpu_threads_d > 0) gpu.threads_d = gpu_threads_d;
        if (gpu_qk_tile_keys > 0) gpu.qk_tile_keys = gpu_qk_tile_keys;
        if (gpu_qk_tile_rows > 0) gpu.qk_tile_rows = gpu_qk_tile_rows;
        if (gpu_pv_tile_d > 0) gpu.pv_tile_d = gpu_pv_tile_d;
        if (gpu_pv_tile_rows > 0) gpu.pv_tile_rows = gpu_pv_tile_rows;
        if (query_tile > 0) gpu.blocking.query_tile = query_tile;
        if (key_chunk > 0) gpu.blocking.key_chunk = key_chunk;
        if (!merge.value().empty()) gpu.blocking.merge = parse_merge(merge);
        schedule_attention(pipeline_, get_target(), shape, cpu_params(), gpu, threads);
        add_gpu_lowering_fixes(get_pipeline(), get_target());
    }

private:
    Type element_type() const {
        if (dtype.value() == "f32") return Float(32);
        if (dtype.value() == "bf16") return BFloat(16);
        throw std::runtime_error("attngen: dtype must be f32 or bf16, got '" + dtype.value() + "'");
    }

    std::vector<int> target_fast_head_dims() const {
        const Target target = get_target();
        const bool fallback =
            target.arch == Target::X86 && !target.has_feature(Target::AVX2) && !target.has_gpu_feature();
        std::vector<int> head_dims;
        for (int head_dim : parse_int_list(fallback ? fallback_fast_head_dims : fast_head_dims))
            if (head_dim > 0) head_dims.push_back(head_dim);
        return head_dims;
    }

    CpuScheduleParams cpu_params() const {
        const ShapeClass shape = parse_shape_class(shape_class);
        CpuScheduleParams params = default_cpu_params(shape);
        if (get_target().has_gpu_feature()) {
            params.blocking = default_gpu_params(shape, get_target()).blocking;
        }
        if (query_tile > 0) params.blocking.query_tile = query_tile;
        if (key_chunk > 0) params.blocking.key_chunk = key_chunk;
        if (qk_block_keys > 0) params.qk_block_keys = qk_block_keys;
        if (pv_block_rows > 0) params.pv_block_rows = pv_block_rows;
        if (vector_width > 0) params.vector_width = vector_width;
        if (split_keys >= 0) params.split_keys = split_keys != 0;
        if (trim_chunk_keys >= 0) params.blocking.trim_chunk_keys = trim_chunk_keys != 0;
        if (grouped_decode_key_runs > 0) params.grouped_decode_key_runs = grouped_decode_key_runs;
        if (bf16_key_chunk_scale > 1) params.blocking.bf16_key_chunk_scale = bf16_key_chunk_scale;
        if (!merge.value().empty()) params.blocking.merge = parse_merge(merge);
        return params;
    }

    // Typical sizes, so the autoschedulers can run (and the runtime's defaults are documented).
    void set_estimates() {
        const bool decode = parse_shape_class(shape_class) == ShapeClass::Decode;
        const int q_len = decode ? 1 : 512, k_len = decode ? 4096 : 512;
        q.set_estimates({{0, 64}, {0, q_len}, {0, 8}, {0, 1}});
        k.set_estimates({{0, 64}, {0, k_len}, {0, 8}, {0, 1}});
        v.set_estimates({{0, 64}, {0, k_len}, {0, 8}, {0, 1}});
        kv_len.set_estimates({{0, 1}});
        out.set_estimates({{0, 64}, {0, q_len}, {0, 8}, {0, 1}});
        scale.set_estimate(0.125f);
        mask_kind.set_estimate(kMaskCausal);
        window.set_estimate(0);
        threads.set_estimate(2);
        for (auto &entry : buffer_inputs_) {
            Region estimates;
            for (int dim = 0; dim < entry.first.dimensions; dim++)
                estimates.push_back({0, dim == 0 ? 64 : 8});
            entry.second->set_estimates(estimates);
        }
    }

    std::vector<std::pair<InputSpec, GeneratorInput<Buffer<>> *>> buffer_inputs_;
    std::vector<std::pair<std::string, GeneratorInput<Expr> *>> scalar_inputs_;
    AttentionPipeline pipeline_;
};

}  // namespace
}  // namespace attngen

HALIDE_REGISTER_GENERATOR(attngen::AttentionGenerator, attention)
