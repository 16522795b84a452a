#include "jit_attention.h"

#include "reference/reference.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <random>
#include <sstream>
#include <stdexcept>
#include <thread>

namespace attngen::tune {

using namespace Halide;

double ProblemShape::flops() const {
    double flops = 4.0 * batch * heads * double(q_len) * k_len * head_dim;
    return mask != kMaskNone && q_len > 1 ? flops / 2 : flops;
}

double ProblemShape::kv_bytes() const {
    return 2.0 * batch * kv_heads * double(k_len) * head_dim * 4;
}

std::string ProblemShape::text() const {
    std::ostringstream out;
    out << "(" << batch << "," << heads << "," << q_len << "," << k_len << "," << head_dim << ")"
        << (kv_heads != heads ? " kv" + std::to_string(kv_heads) : "") << (mask == kMaskCausal ? " causal" : "");
    return out.str();
}

std::string Candidate::describe() const {
    if (!autoscheduler.empty()) return autoscheduler;
    std::ostringstream out;
    out << "tile " << params.blocking.query_tile << " chunk " << params.blocking.key_chunk << " qk "
        << params.qk_block_keys << " pv " << params.pv_block_rows << " vec " << params.vector_width
        << (params.blocking.merge == Merge::Online ? " online" : "") << (params.split_keys ? " split" : "")
        << (params.blocking.trim_chunk_keys ? "" : " untrimmed");
    if (params.blocking.query_tile == 1 && decode_key_runs_take_effect(params))  // decode
        out << " runs " << params.grouped_decode_key_runs;
    return out.str();
}

bool decode_key_runs_take_effect(const CpuScheduleParams &params) {
    return decode_tasks_run_head_groups(params) && !params.blocking.trim_chunk_keys;
}

void random_problem(const ProblemShape &s, uint64_t seed, std::vector<float> &q, std::vector<float> &k,
                    std::vector<float> &v) {
    std::mt19937_64 rng(seed);
    std::normal_distribution<float> normal;
    q.resize(size_t(s.batch) * s.heads * s.q_len * s.head_dim);
    k.resize(size_t(s.batch) * s.kv_heads * s.k_len * s.head_dim);
    v.resize(k.size());
    for (auto *data : {&q, &k, &v}) {
        for (float &x : *data)
            x = normal(rng);
    }
}

namespace {

Buffer<float> random_table(std::vector<int> extents, std::mt19937_64 &rng, float scale) {
    Buffer<float> table(extents);
    std::normal_distribution<float> normal(0.f, scale);
    table.for_each_value([&](float &x) { x = normal(rng); });
    return table;
}

std::vector<double> dense(const Buffer<> &buffer) {
    Buffer<float> f(buffer);
    std::vector<double> values;
    values.reserve(f.number_of_elements());
    for (size_t n = 0; n < f.number_of_elements(); n++)
        values.push_back(f.data()[n]);
    return values;
}

std::vector<double> dense_ints(const Buffer<> &buffer) {
    Buffer<int32_t> f(buffer);
    return std::vector<double>(f.data(), f.data() + f.number_of_elements());
}

// Adams2019 unrolls loops whose *estimated* extent is small, also where the extent is only known at
// run time (the number of key chunks); Halide then refuses to compile. Such loops are made serial,
// one at a time, from the names the errors give; the count is reported with the result.
int compile_making_unknown_unrolls_serial(Func output, const Target &target, Pipeline &compiled) {
    const std::string marker = "Loop over ";
    for (int serialized = 0;; serialized++) {
        try {
            compiled = Pipeline(output);  // a fresh pipeline per try: a failed one stays broken
            compiled.compile_jit(target);
            return serialized;
        } catch (const CompileError &e) {
            const std::string message = e.what();
            const size_t at = message.find(marker);
            if (serialized >= 32 ||
                message.find("Can only unroll for loops over a constant extent") == std::string::npos ||
                at == std::string::npos) {
                throw;
            }
            const size_t begin = at + marker.size();
            const std::string loop = message.substr(begin, message.find(' ', begin) - begin);  // func.sN.var
            const size_t first_dot = loop.find('.'), second_dot = loop.find('.', first_dot + 1);
            const std::string func_name = loop.substr(0, first_dot);
            const int stage = std::stoi(loop.substr(first_dot + 2, second_dot - first_dot - 2));
            const std::string var = loop.substr(second_dot + 1);
            auto env = Internal::build_environment({output.function()});
            auto found = env.find(func_name);
            if (found == env.end()) throw;
            Internal::Function f = found->second;
            Internal::Definition def = stage == 0 ? f.definition() : f.update(stage - 1);
            bool changed = false;
            for (Internal::Dim &dim : def.schedule().dims()) {
                if (dim.var == var && dim.for_type == Internal::ForType::Unrolled) {
                    dim.for_type = Internal::ForType::Serial;
                    changed = true;
                }
            }
            if (!changed) throw;
        }
    }
}

}  // namespace

SchemeInputs::SchemeInputs(const std::string &scheme, const std::string &options, const ProblemShape &s, uint64_t seed)
    : scheme_(scheme), options_(options), shape_(s) {
    std::mt19937_64 rng(seed);
    const int D = s.head_dim, H = s.heads, B = s.batch;
    Buffer<int32_t> q_positions(s.q_len, B), k_positions(s.k_len, B);
    q_positions.for_each_element([&](int i, int b) { q_positions(i, b) = s.k_len - s.q_len + i; });
    k_positions.for_each_element([&](int j, int b) { k_positions(j, b) = j; });
    std::unique_ptr<Scheme> probe = make_scheme(scheme, parse_scheme_options(options));
    for (const InputSpec &spec : probe->inputs()) {
        const std::string &n = spec.name;
        if (spec.dimensions == 0) {
            // Scalars of the built-in schemes at realistic settings; others default to 1.
            if (n == "t5_bidirectional")
                scalars_[n] = 1;
            else if (n == "t5_max_distance")
                scalars_[n] = 128;
            else if (n == "t5_log_span")
                scalars_[n] = float(std::log(128.0 / 8.0));
            else if (n == "deberta_bucket_size")
                scalars_[n] = 256;
            else if (n == "deberta_max_position")
                scalars_[n] = 512;
            else if (n == "deberta_log_span")
                scalars_[n] = float(std::log(511.0 / 128.0));
            else if (n == "xpos_scale_base")
                scalars_[n] = 512;
            else if (n == "xpos_centre")
                scalars_[n] = -((s.k_len + 1) / 2);
            else if (n == "alibi_symmetric")
                scalars_[n] = 0;
            else
                scalars_[n] = 1;
            continue;
        }
        if (n == "slopes") {
            std::vector<double> slopes = ref::alibi_slopes(H);
            Buffer<float> b(H);
            for (int h = 0; h < H; h++)
                b(h) = float(slopes[h]);
            buffers_[n] = b;
        } else if (n == "t5_table") {
            buffers_[n] = random_table({H, 32}, rng, 0.5f);
        } else if (n == "shaw_keys" || n == "shaw_values") {
            buffers_[n] = random_table({D, 33}, rng, 0.5f);  // clip distance 16
        } else if (n == "txl_r") {
            buffers_[n] = random_table({D, s.k_len, H}, rng, 0.5f);
        } else if (n == "txl_u" || n == "txl_v") {
            buffers_[n] = random_table({D, H}, rng, 0.5f);
        } else if (n == "deberta_pos_key" || n == "deberta_pos_query") {
            buffers_[n] = random_table({D, 512, H}, rng, 0.5f);  // span 256 (log buckets 256 / 512)
        } else if (n == "rope_inv_freq") {
            Buffer<float> b(D / 2);
            for (int c = 0; c < D / 2; c++)
                b(c) = 1.0f / std::pow(10000.0f, float(2 * c) / float(D));
            buffers_[n] = b;
        } else if (n == "q_positions") {
            buffers_[n] = q_positions;
        } else if (n == "k_positions") {
            buffers_[n] = k_positions;
        } else if (spec.dimensions == 1 && spec.type == Float(32)) {
            // A per-head parameter of a user-defined scheme: positive, moderate.
            Buffer<float> b(H);
            std::uniform_real_distribution<float> uniform(0.1f, 1.f);
            b.for_each_value([&](float &x) { x = uniform(rng); });
            buffers_[n] = b;
        } else {
            throw std::runtime_error("attngen-tune: no input recipe for " + scheme + " input '" + n + "' (" +
                                     spec.what + ")");
        }
    }
}

bool SchemeInputs::has_reference() const {
    static const char *known[] = {"sdpa", "alibi", "t5", "shaw", "txl", "deberta", "rope", "xpos"};
    return std::find(std::begin(known), std::end(known), scheme_) != std::end(known);
}

std::vector<double> SchemeInputs::reference_output(const ProblemShape &s, const std::vector<float> &q,
                                                   const std::vector<float> &k, const std::vector<float> &v) const {
    ref::Problem p;
    p.batch = s.batch, p.heads = s.heads, p.kv_heads = s.kv_heads, p.q_len = s.q_len, p.k_len = s.k_len;
    p.head_dim = s.head_dim;
    p.q.assign(q.begin(), q.end());
    p.k.assign(k.begin(), k.end());
    p.v.assign(v.begin(), v.end());
    p.mask = s.mask == kMaskCausal ? ref::Mask::Causal : ref::Mask::None;
    ref::Scheme scheme = ref::Sdpa{};
    auto buffer = [&](const char *name) { return dense(buffers_.at(name)); };
    if (scheme_ == "alibi") {
        scheme = ref::Alibi{buffer("slopes"), false};
    } else if (scheme_ == "t5") {
        ref::T5 t5;
        t5.table = buffer("t5_table");
        scheme = t5;
    } else if (scheme_ == "shaw") {
        scheme = ref::Shaw{16, buffer("shaw_keys"), buffer("shaw_values")};
    } else if (scheme_ == "txl") {
        scheme = ref::TransformerXL{buffer("txl_r"), buffer("txl_u"), buffer("txl_v")};
    } else if (scheme_ == "deberta") {
        scheme = ref::Deberta{buffer("deberta_pos_key"), buffer("deberta_pos_query"), 256, 256, 512};
    } else if (scheme_ == "rope") {
        ref::Rope rope;
        rope.pairing =
            options_.find("interleaved") != std::string::npos ? ref::Pairing::Interleaved : ref::Pairing::Half;
        rope.rot_dim = s.head_dim;
        rope.inv_freq = buffer("rope_inv_freq");
        rope.q_positions = dense_ints(buffers_.at("q_positions"));
        rope.k_positions = dense_ints(buffers_.at("k_positions"));
        scheme = rope;
    } else if (scheme_ == "xpos") {
        ref::Xpos xpos;
        xpos.q_positions = dense_ints(buffers_.at("q_positions"));
        xpos.k_positions = dense_ints(buffers_.at("k_positions"));
        xpos.centre = scalars_.at("xpos_centre");
        scheme = xpos;
    } else if (scheme_ != "sdpa") {
        throw std::runtime_error("attngen-tune: the reference has no scheme '" + scheme_ + "'");
    }
    return ref::attention(p, scheme);
}

JitAttention::JitAttention(const std::string &scheme, const std::string &options, ShapeClass shape_class, int head_dim,
                           const Candidate &candidate, const Target &target) {
    bindings_.q = ImageParam(Float(32), 4, "q");
    bindings_.k = ImageParam(Float(32), 4, "k");
    bindings_.v = ImageParam(Float(32), 4, "v");
    bindings_.kv_len = ImageParam(Int(32), 1, "kv_len");
    bindings_.scale = scale_;
    bindings_.mask_kind = mask_kind_;
    bindings_.window = window_;
    std::unique_ptr<Scheme> probe = make_scheme(scheme, parse_scheme_options(options));
    for (const InputSpec &spec : probe->inputs()) {
        if (spec.dimensions == 0) {
            auto parameter = std::make_shared<Internal::Parameter>(spec.type, false, 0, spec.name);
            bindings_.scheme_inputs.scalars[spec.name] = Internal::Variable::make(spec.type, spec.name, *parameter);
            scalar_params_[spec.name] = parameter;
        } else {
            ImageParam param(spec.type, spec.dimensions, spec.name);
            buffer_params_.emplace(spec.name, param);
            bindings_.scheme_inputs.buffers.emplace(spec.name, param);
            bindings_.scheme_inputs.channel_dims[spec.name] = spec.channel_dim;
        }
    }
    const HeadSharingSplit split =
        candidate.autoscheduler.empty() ? head_sharing_split(target, shape_class, candidate.params) : nullptr;
    pipeline_ = define_attention_pipeline(bindings_, scheme, parse_scheme_options(options),
                                          cpu_algorithm_blocking(candidate.params, shape_class), {head_dim},
                                          /*generic=*/false, split);
    for (ImageParam *input : {&bindings_.q, &bindings_.k, &bindings_.v}) {
        input->dim(0).set_min(0).set_stride(1);
        for (int d = 1; d < 4; d++)
            input->dim(d).set_min(0);
    }
    OutputImageParam out = pipeline_.output.output_buffer();
    out.dim(0).set_min(0).set_stride(1).set_extent(bindings_.q.dim(0).extent());
    for (int d = 1; d < 4; d++)
        out.dim(d).set_min(0).set_extent(bindings_.q.dim(d).extent());

    auto start = std::chrono::steady_clock::now();
    if (candidate.autoscheduler.empty()) {
        schedule_attention(pipeline_, target, shape_class, candidate.params, default_gpu_params(shape_class, target),
                           threads_);
    } else {
        // Estimates of the tuning shape class, as the generator declares them.
        const bool decode = shape_class == ShapeClass::Decode;
        const int q_len = decode ? 1 : 1024, k_len = decode ? 4096 : 1024, heads = decode ? 32 : 8;
        bindings_.q.set_estimates({{0, head_dim}, {0, q_len}, {0, heads}, {0, 1}});
        bindings_.k.set_estimates({{0, head_dim}, {0, k_len}, {0, heads}, {0, 1}});
        bindings_.v.set_estimates({{0, head_dim}, {0, k_len}, {0, heads}, {0, 1}});
        bindings_.kv_len.set_estimates({{0, 1}});
        scale_.set_estimate(0.f);
        mask_kind_.set_estimate(kMaskCausal);
        window_.set_estimate(0);
        threads_.set_estimate(2);
        for (auto &[name, parameter] : scalar_params_) {
            parameter->set_estimate(parameter->type().is_float() ? Expr(1.f) : Expr(1));
        }
        for (auto &[name, param] : buffer_params_) {
            Region estimates;
            for (int d = 0; d < param.dimensions(); d++)
                estimates.push_back({0, d == 0 ? head_dim : 64});
            param.set_estimates(estimates);
        }
        pipeline_.output.set_estimates({{0, head_dim}, {0, q_len}, {0, heads}, {0, 1}});
        static const std::map<std::string, std::string> plugins = {
            {"Adams2019", "libautoschedule_adams2019.so"},
            {"Mullapudi2016", "libautoschedule_mullapudi2016.so"},
            {"Li2018", "libautoschedule_li2018.so"},
        };
        auto plugin = plugins.find(candidate.autoscheduler);
        if (plugin == plugins.end()) throw std::runtime_error("unknown autoscheduler " + candidate.autoscheduler);
        static std::map<std::string, bool> loaded;
        if (!loaded[plugin->first]) {
            load_plugin(std::string(ATTNGEN_HALIDE_PLUGIN_DIR) + "/" + plugin->second);
            loaded[plugin->first] = true;
        }
        Pipeline(pipeline_.output)
            .auto_schedule(candidate.autoscheduler, target, MachineParams(2, 32 * 1024 * 1024, 40));
    }
    if (candidate.autoscheduler.empty()) {
        compiled_ = Pipeline(pipeline_.output);
        compiled_.compile_jit(target);
    } else {
        serialized_unrolls_ = compile_making_unknown_unrolls_serial(pipeline_.output, target, compiled_);
    }
    compile_seconds_ = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}

void JitAttention::bind(const ProblemShape &s, const std::vector<float> &q, const std::vector<float> &k,
                        const std::vector<float> &v, const SchemeInputs &inputs) {
    q_ = Buffer<float>(s.head_dim, s.q_len, s.heads, s.batch);
    k_ = Buffer<float>(s.head_dim, s.k_len, s.kv_heads, s.batch);
    v_ = Buffer<float>(s.head_dim, s.k_len, s.kv_heads, s.batch);
    out_ = Buffer<float>(s.head_dim, s.q_len, s.heads, s.batch);
    std::copy(q.begin(), q.end(), q_.data());
    std::copy(k.begin(), k.end(), k_.data());
    std::copy(v.begin(), v.end(), v_.data());
    kv_len_ = Buffer<int32_t>(s.batch);
    kv_len_.fill(s.k_len);
    bindings_.q.set(q_);
    bindings_.k.set(k_);
    bindings_.v.set(v_);
    bindings_.kv_len.set(kv_len_);
    scale_.set(0.f);
    mask_kind_.set(s.mask);
    window_.set(0);
    threads_.set(int32_t(std::max(1u, std::thread::hardware_concurrency())));
    for (auto &[name, param] : buffer_params_)
        param.set(inputs.buffers().at(name));
    for (auto &[name, parameter] : scalar_params_) {
        const double value = inputs.scalars().at(name);
        if (parameter->type().is_float())
            parameter->set_scalar<float>(float(value));
        else
            parameter->set_scalar<int32_t>(int32_t(value));
    }
}

std::vector<float> JitAttention::run(const ProblemShape &s, const std::vector<float> &q, const std::vector<float> &k,
                                     const std::vector<float> &v, const SchemeInputs &inputs) {
    bind(s, q, k, v, inputs);
    compiled_.realize(out_);
    return std::vector<float>(out_.data(), out_.data() + out_.number_of_elements());
}

void JitAttention::prepare(const ProblemShape &s, const SchemeInputs &inputs, uint64_t seed) {
    std::vector<float> q, k, v;
    random_problem(s, seed, q, k, v);
    bind(s, q, k, v, inputs);
    compiled_.realize(out_);  // warm-up
}

std::vector<double> JitAttention::time(int repetitions, const std::function<void()> &before_each) {
    std::vector<double> samples;
    for (int n = 0; n < repetitions; n++) {
        if (before_each) before_each();
        auto start = std::chrono::steady_clock::now();
        compiled_.realize(out_);
        samples.push_back(std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count());
    }
    return samples;
}

}  // namespace attngen::tune
