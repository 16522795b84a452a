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
            {"deberta_pos_key", Float(32), 3, "[heads, 2*span, head_dim] relative key projections", 0, true},
            {"deberta_pos_query", Float(32), 3, "[heads, 2*span, head_dim] relative query projections", 0, true},
            {"deberta_bucket_size", Int(32), 0, "position_buckets (<= 0: no log buckets)"},
            {"deberta_max_position", Int(32), 0, "max_relative_positions, for log buckets"},
            {"deberta_log_span", Float(32), 0, "log((max_position - 1) / (bucket_size / 2)), computed by the runtime"}};
    }

    Expr default_scale(const AttentionProblem &p) const override { return 1.f / sqrt(3.f * cast<float>(p.head_dim)); }

    void setup(const AttentionProblem &p) override {
        span_ = p.extent("deberta_pos_key", 1) / 2;
        const Expr span = span_;
        const Expr bucket_size = max(p.scalar("deberta_bucket_size"), 2);
        const Expr max_position = max(p.scalar("deberta_max_position"), 2);
        log_buckets_ = p.scalar("deberta_bucket_size") > 0 && p.scalar("deberta_max_position") > 0;
        max_position_ = max_position;
        half_buckets_ = bucket_size / 2;
        const Expr log_buckets = log_buckets_, log_span = p.scalar("deberta_log_span");
        // Table row of each relative position p_i - j, tabulated once per call: the log buckets are
        // evaluated once per distance, not per score.
        Var rel("rel");
        row_table_ = helper(Func("deberta_row"), Placement::PerCall);
        row_table_(rel) =
            row_of_bucket(select(log_buckets, deberta_log_bucket(rel, bucket_size, max_position, log_span), rel));

        Func pos_key = p.table("deberta_pos_key");      // (d, r, h)
        Func pos_query = p.table("deberta_pos_query");  // (d, r, h)
        Var d("d"), r("r"), j("j"), h("h"), b("b");
        Func key_table("deberta_key_table"), query_table("deberta_query_table"), keys("deberta_keys");
        key_table(d, r, h, b) = pos_key(d, r, h);
        query_table(d, r, h, b) = pos_query(d, r, h);
        keys(d, j, h, b) = p.k(d, j, p.kv_head(h), b);
        if (p.single_row_tiles) {
            // One query row (decode): c2p as a table over Kr's rows, q . Kr[r], 2 span dot products per
            // row and head (512 at span 256) where a product per score took one per key (4096 at
            // Lk = 4096); each key reads its row's entry. p2c is k_j . Qr[r]: the kernel folds it into the
            // query beyond the edges (RelativeTableTerm::key_table) and takes a dot product per score
            // between them.
            Var i("i");
            RDom channel(0, p.head_dim, "deberta_c2p_c");
            content_to_position_ = helper(Func("deberta_c2p_rows"), Placement::PerQueryTile);
            content_to_position_(r, i, h, b) = 0.f;
            content_to_position_(r, i, h, b) += p.q(channel, i, h, b) * key_table(channel, r, h, b);
            position_query_table_ = query_table;
            return;
        }
        // c2p: q_i . Kr[r] for the rows a query tile reaches, per tile.
        content_to_position_ =
            contraction("deberta_c2p", p.q, p.q_len, key_table, 2 * span, p.head_dim, Placement::PerQueryTile);
        // p2c: k_j . Qr[r] once per call, for each key only the run of rows its queries reach: the rows
        // of p_i - j over all i, at most q_len + 3 for a group of 4 keys (one register block of the
        // product), where the whole table has 2 span. Table rows innermost (Qr as the contraction's rows),
        // so the rows a vector of query rows reads for one key are neighbours. At (4,8,256,256,64), span
        // 256, the whole table computed twice the products the scores read (JIT, same process: the run
        // form takes 0.87x / 0.84x the time, none / causal; 0.99-1.02x from 512^2 up, where
        // q_len + 3 >= 2 span leaves the whole table).
        const int key_group = 4;
        const Expr rows_per_key = min(p.q_len + (key_group - 1), 2 * span);
        const Func row_table = row_table_;
        const Expr first_query = p.query_position(0);
        auto first_row = [=](const Expr &key) {
            Expr last_key_of_group = key / key_group * key_group + (key_group - 1);
            return clamp(row_table(first_query - last_key_of_group), 0, 2 * span - rows_per_key);
        };
        // Of a group's run, the rows between its least and greatest distance p_i - j that the mask shows (a causal
        // mask: from distance 0 up, about half of the run).
        ContractionSkew skew{first_row, key_group};
        skew.run_length = rows_per_key;
        skew.seen_run = [=](const Expr &first_key) {
            const Expr last_key = first_key + (key_group - 1), base = first_row(first_key);
            const Expr begin = row_table(p.first_query_seeing(last_key) - last_key) - base;
            const Expr end = row_table(p.last_query_seeing(first_key) - first_key) - base + 1;
            return std::make_pair(clamp(begin, 0, rows_per_key), clamp(end, 0, rows_per_key));
        };
        Func by_key_run =
            contraction("deberta_p2c", query_table, 2 * span, keys, p.k_len, p.head_dim, Placement::PerCall, skew);
        position_to_content_ = Func("deberta_p2c_by_row");
        position_to_content_(r, j, h, b) = by_key_run(j, clamp(r - first_row(j), 0, rows_per_key - 1), h, b);
    }

    // Tables by row of the distance d = j - p_i (relative position -d), constant beyond the last log
    // bucket (|p_i - j| >= max_position - 1) or, without log buckets, beyond the span.
    RelativeTableTerm relative_table_term(const AttentionProblem &p) const override {
        RelativeTableTerm term;
        const Func row_table = row_table_;
        term.low_edge = select(log_buckets_, 1 - max_position_, 1 - span_);
        term.high_edge = select(log_buckets_, max_position_ - 1, span_);
        // Row bounds: the log bucket of the relative position clamped to +-(max_position - 1) is that
        // position within +-bucket_size/2, and beyond it lies between bucket_size/2 and bucket_size in
        // magnitude (the float rounding of the last bucket included).
        const Expr mid = half_buckets_, log_buckets = log_buckets_, max_position = max_position_;
        auto clamped = [max_position](const Expr &distance) {
            return clamp(-distance, 1 - max_position, max_position - 1);
        };
        term.row_lower = [=](const Expr &distance) {
            Expr relative = clamped(distance);
            return row_of_bucket(select(log_buckets, select(relative < -mid, -2 * mid, min(relative, mid)), -distance));
        };
        term.row_upper = [=](const Expr &distance) {
            Expr relative = clamped(distance);
            return row_of_bucket(select(log_buckets, select(relative > mid, 2 * mid, max(relative, -mid)), -distance));
        };
        term.by_query = content_to_position_;
        if (p.single_row_tiles) {
            // The row clamped where the tables are read (bounds inference cannot see through row_table).
            const Expr span = span_;
            term.row = [row_table, span](const Expr &distance) { return clamp(row_table(-distance), 0, 2 * span - 1); };
            term.key_table = position_query_table_;
            return term;
        }
        term.row = [row_table](const Expr &distance) { return row_table(-distance); };
        term.by_key = position_to_content_;
        return term;
    }

private:
    // Table row of a (log-)bucketed relative position.
    Expr row_of_bucket(const Expr &bucket) const { return clamp(bucket + span_, 0, 2 * span_ - 1); }

    Expr span_, max_position_, half_buckets_, log_buckets_;
    Func row_table_, content_to_position_, position_to_content_;
    Func position_query_table_;  // Qr as (d, r, h, b), decode's key_table
};

}  // namespace

ATTNGEN_REGISTER_SCHEME(deberta, [](const SchemeOptions &) { return std::make_unique<Deberta>(); })

}  // namespace attngen
