// One attention pipeline compiled in-process (Halide JIT) for a scheme and a problem shape, with
// realistic scheme inputs bound, for the autotuner: compile a schedule candidate (hand schedule with
// parameters, or a Halide autoscheduler), check it against the double-precision reference, time it.
#pragma once

#include "generators/attention_pipeline.h"
#include "schedules/attention_schedule.h"

#include <Halide.h>

#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace attngen::tune {

struct ProblemShape {
    int batch = 1, heads = 8, kv_heads = 8, q_len = 1024, k_len = 1024, head_dim = 64;
    int mask = 0;             // MaskKind
    double flops() const;     // 4 B H Lq Lk D, halved when causal with Lq > 1
    double kv_bytes() const;  // K and V bytes read
    std::string text() const;
};

// How a candidate is scheduled: the hand schedule with parameters, or an autoscheduler.
struct Candidate {
    CpuScheduleParams params;
    std::string autoscheduler;  // empty: hand schedule; else Adams2019, Mullapudi2016, Li2018
    // Names the kernel: candidates that differ only in a parameter without effect read the same.
    std::string describe() const;
};

// Whether CpuScheduleParams::grouped_decode_key_runs changes the kernel (schedule_decode): only in decode
// head-group tasks (no split-K, two-pass merge) over whole chunks (untrimmed).
bool decode_key_runs_take_effect(const CpuScheduleParams &params);

// The scheme's parameters used for tuning, sized for a shape (tables filled from a seed).
class SchemeInputs {
public:
    SchemeInputs(const std::string &scheme, const std::string &options, const ProblemShape &shape, uint64_t seed);
    const std::string &scheme() const { return scheme_; }
    const std::map<std::string, Halide::Buffer<>> &buffers() const { return buffers_; }
    const std::map<std::string, double> &scalars() const { return scalars_; }
    // Whether the double-precision reference knows this scheme (user-defined ones: no).
    bool has_reference() const;
    std::vector<double> reference_output(const ProblemShape &shape, const std::vector<float> &q,
                                         const std::vector<float> &k, const std::vector<float> &v) const;

private:
    std::string scheme_, options_;
    ProblemShape shape_;
    std::map<std::string, Halide::Buffer<>> buffers_;
    std::map<std::string, double> scalars_;
};

// A compiled candidate for one shape class and head_dim.
class JitAttention {
public:
    // Throws Halide::CompileError (or std::exception) when the candidate does not compile.
    JitAttention(const std::string &scheme, const std::string &options, ShapeClass shape_class, int head_dim,
                 const Candidate &candidate, const Halide::Target &target);

    // Runs on a problem; inputs row-major [B,H,Lq,D] / [B,Hkv,Lk,D]; returns the output row-major.
    std::vector<float> run(const ProblemShape &shape, const std::vector<float> &q, const std::vector<float> &k,
                           const std::vector<float> &v, const SchemeInputs &inputs);
    // Sets up a problem (random data) for timing; then time() runs it.
    void prepare(const ProblemShape &shape, const SchemeInputs &inputs, uint64_t seed);
    // `repetitions` timed runs of the prepared problem, seconds each; `before_each` (untimed) runs
    // before every one.
    std::vector<double> time(int repetitions, const std::function<void()> &before_each = nullptr);
    double compile_seconds() const { return compile_seconds_; }
    // Loops an autoscheduler unrolled over a run-time extent, made serial so that it compiles.
    int serialized_unrolls() const { return serialized_unrolls_; }

private:
    void bind(const ProblemShape &shape, const std::vector<float> &q, const std::vector<float> &k,
              const std::vector<float> &v, const SchemeInputs &inputs);

    AttentionBindings bindings_;
    Halide::Param<float> scale_{"scale"};
    Halide::Param<int32_t> mask_kind_{"mask_kind"}, window_{"window"};
    Halide::Param<int32_t> threads_{"threads"};  // the JIT's thread pool: Halide's default size
    std::map<std::string, Halide::ImageParam> buffer_params_;
    std::map<std::string, std::shared_ptr<Halide::Internal::Parameter>> scalar_params_;
    AttentionPipeline pipeline_;
    Halide::Pipeline compiled_;  // pipeline_.output, JIT-compiled
    Halide::Buffer<float> q_, k_, v_, out_;
    Halide::Buffer<int32_t> kv_len_;
    double compile_seconds_ = 0;
    int serialized_unrolls_ = 0;
};

// Random problem data for a shape (seeded).
void random_problem(const ProblemShape &shape, uint64_t seed, std::vector<float> &q, std::vector<float> &k,
                    std::vector<float> &v);

}  // namespace attngen::tune
