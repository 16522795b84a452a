// T5 relative position bias: a learned bias per (bucket of j - p_i, head), added to unscaled
// scores. The bias of every distance is looked up once per call (decode: once per key chunk), not once
// per score.
#include "../positional_math.h"
#include "../scheme.h"

namespace attngen {
namespace {

using namespace Halide;

class T5 : public Scheme {
public:
    std::string name() const override { return "t5"; }

    std::vector<InputSpec> inputs() const override {
        return {{"t5_table", Float(32), 2, "[num_buckets, heads] relative_attention_bias.weight"},
                {"t5_bidirectional", Int(32), 0, "1: encoder buckets (both signs), 0: decoder buckets"},
                {"t5_max_distance", Int(32), 0, "distance at which buckets saturate"},
                {"t5_log_span", Float(32), 0, "log(max_distance / max_exact), computed by the runtime in double"}};
    }

    Expr default_scale(const AttentionProblem &) const override { return 1.f; }

    void setup(const AttentionProblem &p) override {
        Func table = p.table("t5_table");  // (h, bucket)
        Expr num_buckets = p.extent("t5_table", 1);
        Var delta("delta"), h("h");
        Expr bidirectional = p.scalar("t5_bidirectional") != 0;
        // The bucket (a log) depends on the distance alone: computed once, then looked up per head.
        Func bucket_by_distance = helper(Func("t5_bucket"), Placement::PerCall);
        bucket_by_distance(delta) =
            clamp(t5_bucket(delta, bidirectional, num_buckets, p.scalar("t5_log_span")), 0, num_buckets - 1);
        // Decode (one-row tiles) looks a chunk's biases up inside its task, beside the chunk's memory-bound
        // reads of K and V, not in a compute-bound pass of its own before them (see bench/results/HISTORY.md).
        bias_by_distance_ = helper(Func("t5_bias"), p.single_row_tiles ? Placement::PerKeyChunk : Placement::PerCall);
        bias_by_distance_(delta, h) = table(h, bucket_by_distance(delta));
    }

    Expr logit_bias(const AttentionProblem &p, const Expr &i, const Expr &j, const Expr &h,
                    const Expr &) const override {
        return bias_by_distance_(j - p.query_position(i), h);
    }

private:
    Func bias_by_distance_;
};

}  // namespace

ATTNGEN_REGISTER_SCHEME(t5, [](const SchemeOptions &) { return std::make_unique<T5>(); })

}  // namespace attngen
