// A user-defined scheme, the README's worked example: KERPLE's logarithmic bias (Chi et al. 2022),
//   bias(i, j) = -r1_h * log(1 + r2_h * |p_i - j|),
// added to the scaled scores. One file: CMake finds it through ATTNGEN_EXTRA_SCHEME_SOURCES,
// generates its kernels for every shape class and device, and registers them with the runtime,
// which calls it by name with its inputs (attngen::attention("kerple", ...)).
#include "scheme.h"

namespace attngen {
namespace {

using namespace Halide;

class Kerple : public Scheme {
public:
    std::string name() const override { return "kerple"; }

    std::vector<InputSpec> inputs() const override {
        return {{"kerple_r1", Float(32), 1, "[heads] bias scale r1 > 0"},
                {"kerple_r2", Float(32), 1, "[heads] log slope r2 > 0"}};
    }

    Expr logit_bias(const AttentionProblem &p, const Expr &i, const Expr &j, const Expr &h,
                    const Expr &) const override {
        Expr distance = p.query_position(i) - j;
        distance = cast<float>(max(distance, -distance));
        return -p.table("kerple_r1")(h) * log(1.f + p.table("kerple_r2")(h) * distance);
    }
};

}  // namespace

ATTNGEN_REGISTER_SCHEME(kerple, [](const SchemeOptions &) { return std::make_unique<Kerple>(); })

}  // namespace attngen
