// DeBERTa disentangled attention: score = (q_i.k_j + q_i.Kr[idx] + k_j.Qr[idx]) / sqrt(3D), with
// idx = clamp(bucket(p_i - j) + span, 0, 2 span - 1) (query minus key; p2c uses the same index, as
// the reference does) and optional log buckets.
#include "../positional_math.h"
#include "../scheme.h"

namespace attngen {
namespace {

using namespace Halide;

class Deberta : public Scheme {
public:
    std::string name() const override { return "deberta"; }

    std::vector<InputSpec> inputs() const override {
        return {
            {"deberta_pos_key", Float(32), 3, "[heads, 2*span, head_dim] relative key projections", 0},
            {"deberta_pos_query", Float(32), 3, "[heads, 2*span, head_dim] relative query projections", 0},
            {"deberta_bucket_size", Int(32), 0, "position_buckets (<= 0: no log buckets)"},
            {"deberta_max_position", Int(32), 0, "max_relative_positions, for log buckets"},
            {"deberta_log_span", Float(32), 0, "log((max_position - 1) / (bucket_size / 2)), computed by the runtime"}};
    }

    Expr default_scale(const AttentionProblem &p) const override { return 1.f / sqrt(3.f * cast<float>(p.head_dim)); }

    void setup(const AttentionProblem &p) override {
        Expr span = p.extent("deberta_pos_key", 1) / 2;
        Expr bucket_size = p.scalar("deberta_bucket_size"), max_position = p.scalar("deberta_max_position");
        Func pos_key = p.table("deberta_pos_key");      // (d, r, h)
        Func pos_query = p.table("deberta_pos_query");  // (d, r, h)
        Var rel("rel"), r("r"), i("i"), j("j"), h("h"), b("b");
        // Table row of each relative position p_i - j, once per call: the log buckets are evaluated
        // once per distance, and bounds inference sees a clamped table instead of the bucket math.
        Expr bucketed = select(
            bucket_size > 0 && max_position > 0,
            deberta_log_bucket(rel, max(bucket_size, 2), max(max_position, 2), p.scalar("deberta_log_span")), rel);
        row_of_distance_ = helper(Func("deberta_row"), Placement::PerCall);
        row_of_distance_(rel) = clamp(bucketed + span, 0, 2 * span - 1);
        Var d("d");
        Func key_table("deberta_key_table"), query_table("deberta_query_table"), keys("deberta_keys");
        key_table(d, r, h, b) = pos_key(d, r, h);
        query_table(d, r, h, b) = pos_query(d, r, h);
        keys(d, j, h, b) = p.k(d, j, p.kv_head(h), b);
        // c2p: q_i . Kr[r] for every row, per query row of a tile.
        content_to_position_ =
            contraction("deberta_c2p", p.q, p.q_len, key_table, 2 * span, p.head_dim, Placement::PerQueryTile);
        if (p.single_row_tiles) {
            // One query row: each key needs one row of Qr, so p2c is one dot product per score.
            position_to_content_ = dot_per_score(
                "deberta_p2c",
                [&](const Expr &c, const Expr &j, const Expr &i, const Expr &h, const Expr &b) {
                    return keys(c, j, h, b) * query_table(c, row_of_distance_(p.query_position(i) - j), h, b);
                },
                p.head_dim);
            return;
        }
        // p2c: k_j . Qr[r] for every row and key, once per call.
        position_to_content_ =
            contraction("deberta_p2c", keys, p.k_len, query_table, 2 * span, p.head_dim, Placement::PerCall);
    }

    Expr score_term(const AttentionProblem &p, const Expr &i, const Expr &j, const Expr &h,
                    const Expr &b) const override {
        Expr row = row_of_distance_(p.query_position(i) - j);
        Expr p2c = p.single_row_tiles ? position_to_content_(j, i, h, b) : position_to_content_(row, j, h, b);
        return content_to_position_(row, i, h, b) + p2c;
    }

private:
    Func row_of_distance_, content_to_position_, position_to_content_;
};

}  // namespace

ATTNGEN_REGISTER_SCHEME(deberta, [](const SchemeOptions &) { return std::make_unique<Deberta>(); })

}  // namespace attngen
