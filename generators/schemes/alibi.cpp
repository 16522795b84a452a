// ALiBi (Press et al.): a linear bias on the scaled scores, -slope_h * (p_i - j). References add
// +slope_h * j instead; the two differ by a per-row constant, so probabilities are identical, and
// the paper form keeps magnitudes small at long range.
#include "../scheme.h"

namespace attngen {
namespace {

using namespace Halide;

class Alibi : public Scheme {
public:
    std::string name() const override { return "alibi"; }

    std::vector<InputSpec> inputs() const override {
        return {{"slopes", Float(32), 1, "[heads] slope per head"},
                {"alibi_symmetric", Int(32), 0, "1: -slope*|p_i - j| (bidirectional encoders), 0: -slope*(p_i - j)"}};
    }

    Expr logit_bias(const AttentionProblem &p, const Expr &i, const Expr &j, const Expr &h,
                    const Expr &) const override {
        // In float (exact below 2^24): the row position converts once per tile, and a score costs
        // a subtract, an abs and a multiply-add.
        Expr distance = cast<float>(p.query_position(i)) - cast<float>(j);
        distance = select(p.scalar("alibi_symmetric") != 0, abs(distance), distance);
        return -p.table("slopes")(h) * distance;
    }
};

}  // namespace

ATTNGEN_REGISTER_SCHEME(alibi, [](const SchemeOptions &) { return std::make_unique<Alibi>(); })

}  // namespace attngen
