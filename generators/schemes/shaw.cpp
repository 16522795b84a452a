// Shaw et al. relative position representations (tensor2tensor): learned key and value vectors per
// clipped distance clip(j - p_i, -K, K). Scores gain q_i . aK[r]; outputs gain sum_j p_ij aV[r].
#include "../scheme.h"

namespace attngen {
namespace {

using namespace Halide;

class Shaw : public Scheme {
public:
    std::string name() const override { return "shaw"; }

    std::vector<InputSpec> inputs() const override {
        // aK in the kernel's element type: bf16 kernels then take q.aK on bf16 dot products, as q.k. aV stays
        // float32: read per output channel in the P.V pass, a bf16 aV widened there took 1.05-1.09x the
        // time at D = 128.
        return {{"shaw_keys", Float(32), 2, "[2K+1, head_dim] relative key table", 0, true},
                {"shaw_values", Float(32), 2, "[2K+1, head_dim] relative value table", 0}};
    }

    void setup(const AttentionProblem &p) override {
        clip_ = (p.extent("shaw_keys", 1) - 1) / 2;
        Func keys = p.table("shaw_keys");  // (d, r)
        Var d("d"), r("r"), h("h"), b("b");
        if (p.single_row_tiles && p.inputs->buffer("shaw_keys").type().is_bfloat()) {
            // bf16 decode takes q.aK per score, in float32: widen the table once per call, not at every use
            // (5.5 % of the kernel's `perf` samples, (1,32,1,4096,128) with 8 KV heads).
            Func widened("shaw_keys_widened");
            widened(d, r) = keys(d, r);
            keys = helper(widened, Placement::PerCall);
        }
        Func key_rows("shaw_key_rows");
        key_rows(d, r, h, b) = keys(d, r);
        // q_i . aK[r] for every table row: (2K+1) x D per query row, far less than q.k.
        query_dot_keys_ =
            contraction("shaw_q_dot_keys", p.q, p.q_len, key_rows, 2 * clip_ + 1, p.head_dim, Placement::PerQueryTile);
    }

    RelativeTableTerm relative_table_term(const AttentionProblem &) const override {
        RelativeTableTerm term;
        const Expr clip = clip_;
        term.row = [clip](const Expr &distance) { return clamp(distance, -clip, clip) + clip; };
        term.by_query = query_dot_keys_;
        term.low_edge = -clip;
        term.high_edge = clip;
        return term;
    }

    bool has_value_term() const override { return true; }

    ValueTerm value_term(const AttentionProblem &p) const override {
        (void)p;
        Func values = p.table("shaw_values");
        Var d("d"), r("r"), h("h"), b("b");
        Func table("shaw_value_rows");
        table(d, r, h, b) = values(d, r);
        return {table, clip_};
    }

private:
    Expr clip_;
    Func query_dot_keys_;
};

}  // namespace

ATTNGEN_REGISTER_SCHEME(shaw, [](const SchemeOptions &) { return std::make_unique<Shaw>(); })

}  // namespace attngen
