// xPos (Sun et al., torchscale): interleaved rotation with theta_f = 10000^(-f/(D/2)) and a decay
// zeta_f^((n + centre)/scale_base), zeta_f = (2f + 0.4D)/(1.4D); queries are scaled by it, keys
// by its inverse, so scores decay as zeta^((n - m)/scale_base). `centre` is the reference's
// min_pos = -N // 2; it cancels in the scores and only keeps the factors near 1.
#include "../positional_math.h"
#include "../scheme.h"

namespace attngen {
namespace {

using namespace Halide;

class Xpos : public Scheme {
public:
    std::string name() const override { return "xpos"; }

    std::vector<InputSpec> inputs() const override {
        return {{"q_positions", Int(32), 2, "[batch, q_len] position ids of the queries"},
                {"k_positions", Int(32), 2, "[batch, k_len] position ids of the keys"},
                {"xpos_scale_base", Float(32), 0, "decay scale base (512 in torchscale)"},
                {"xpos_centre", Int(32), 0, "min_pos = -N // 2 of the reference call"}};
    }

    void setup(const AttentionProblem &p) override {
        Func q_positions = p.table("q_positions"), k_positions = p.table("k_positions");
        Expr scale_base = p.scalar("xpos_scale_base"), centre = p.scalar("xpos_centre");
        Expr pairs = cast<float>(p.head_dim / 2);
        Var f("f"), n("n"), b("b");
        Expr inv_freq = 1.f / pow(10000.f, cast<float>(f) / pairs);
        Expr zeta = (2.f * cast<float>(f) + 0.4f * cast<float>(p.head_dim)) / (1.4f * cast<float>(p.head_dim));
        auto tables = [&](Func positions, bool downscale, const std::string &tag, Func &cos_table, Func &sin_table) {
            Expr position = cast<float>(positions(n, b));
            Expr decay = pow(zeta, (position + cast<float>(centre)) / scale_base);
            if (downscale) decay = 1.f / decay;
            cos_table = helper(Func("xpos_" + tag + "_cos"), Placement::PerCall);
            sin_table = helper(Func("xpos_" + tag + "_sin"), Placement::PerCall);
            cos_table(f, n, b) = sin_cos(position * inv_freq).cos * decay;
            sin_table(f, n, b) = sin_cos(position * inv_freq).sin * decay;
        };
        tables(q_positions, false, "q", q_cos_, q_sin_);
        tables(k_positions, true, "k", k_cos_, k_sin_);
        head_dim_ = p.head_dim;
    }

    Func transform_query(const AttentionProblem &, const Func &q) const override {
        return rotated(q, q_cos_, q_sin_, "xpos_q");
    }
    Func transform_key(const AttentionProblem &, const Func &k) const override {
        return rotated(k, k_cos_, k_sin_, "xpos_k");
    }

private:
    Func rotated(const Func &x, const Func &cos_table, const Func &sin_table, const std::string &name) const {
        Var d("d"), n("n"), h("h"), b("b");
        Func out(name);
        // Rotates pairs below 2 * (D / 2); an odd last channel passes through, as in the reference.
        out(d, n, h, b) = rotate(
            Pairing::Interleaved, d, (head_dim_ / 2) * 2, [&](const Expr &c) { return x(c, n, h, b); },
            [&](const Expr &f) { return cos_table(f, n, b); }, [&](const Expr &f) { return sin_table(f, n, b); });
        return out;
    }

    Expr head_dim_;
    Func q_cos_, q_sin_, k_cos_, k_sin_;
};

}  // namespace

ATTNGEN_REGISTER_SCHEME(xpos, [](const SchemeOptions &) { return std::make_unique<Xpos>(); })

}  // namespace attngen
