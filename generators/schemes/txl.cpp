// Transformer-XL / XLNet relative attention: score = ((q_i + u).k_j + (q_i + v).R[t]) * scale, with
// R the projected relative embeddings and t = k_len - 1 - (p_i - j) (R rows run from distance
// k_len - 1 down to 0). Queries sit after a memory of k_len - q_len positions. The (q + v).R products
// are computed per query tile over the rows it needs: no O(L^2) rel-shift buffer.
#include "../scheme.h"

namespace attngen {
namespace {

using namespace Halide;

class TransformerXL : public Scheme {
public:
    std::string name() const override { return "txl"; }

    std::vector<InputSpec> inputs() const override {
        return {{"txl_r", Float(32), 3, "[heads, k_len, head_dim] projected relative embeddings (r_head_k)", 0, true},
                {"txl_u", Float(32), 2, "[heads, head_dim] content bias u (r_w_bias)", 0},
                {"txl_v", Float(32), 2, "[heads, head_dim] position bias v (r_r_bias)", 0}};
    }

    void setup(const AttentionProblem &p) override {
        Func r_rows = p.table("txl_r");  // (d, t, h)
        Func v_bias = p.table("txl_v");  // (d, h)
        Var d("d"), t("t"), i("i"), h("h"), b("b");
        Func query_plus_v("txl_q_plus_v"), relative("txl_relative");
        query_plus_v(d, i, h, b) = p.q(d, i, h, b) + v_bias(d, h);
        relative(d, t, h, b) = r_rows(d, t, h);
        position_scores_ = contraction("txl_position_scores", query_plus_v, p.q_len, relative, p.k_len, p.head_dim,
                                       Placement::PerQueryTile);
    }

    Func transform_query(const AttentionProblem &p, const Func &q) const override {
        Func u_bias = p.table("txl_u");
        Var d("d"), i("i"), h("h"), b("b");
        Func with_content_bias("txl_q_plus_u");
        with_content_bias(d, i, h, b) = q(d, i, h, b) + u_bias(d, h);
        return with_content_bias;
    }

    Expr score_term(const AttentionProblem &p, const Expr &i, const Expr &j, const Expr &h,
                    const Expr &b) const override {
        // Future keys (masked under causal) would index past the last row: clamp them to it.
        Expr t = clamp(p.k_len - 1 - (p.query_position(i) - j), 0, p.k_len - 1);
        return position_scores_(t, i, h, b);
    }

private:
    Func position_scores_;
};

}  // namespace

ATTNGEN_REGISTER_SCHEME(txl, [](const SchemeOptions &) { return std::make_unique<TransformerXL>(); })

}  // namespace attngen
