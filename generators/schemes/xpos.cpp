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
        Var f("f"), n("n"), b("b");
        // pow and log call libm once per lane: once per frequency here, then a vector exp2 per (f, n, b).
        Func inv_freq = helper(Func("xpos_inv_freq"), Placement::PerCall);
        Func log2_zeta = helper(Func("xpos_log2_zeta"), Placement::PerCall);
        inv_freq(f) = xpos_inv_freq(f, p.head_dim);
        log2_zeta(f) = xpos_log2_zeta(f, p.head_dim);
        // One table per side holding (cos, sin) x decay: the angle is reduced and both polynomials run once.
        auto table = [&](Func positions, int downscale, const std::string &tag) {
            Expr position = cast<float>(positions(n, b));
            Func cos_sin = helper(Func("xpos_" + tag + "_cos_sin"), Placement::PerCall);
            cos_sin(f, n, b) = scaled_cos_sin(position * inv_freq(f),
                                              xpos_decay(log2_zeta(f), position, centre, scale_base, downscale));
            return cos_sin;
        };
        q_cos_sin_ = table(q_positions, 0, "q");
        k_cos_sin_ = table(k_positions, 1, "k");
        head_dim_ = p.head_dim;
    }

    Func transform_query(const AttentionProblem &, const Func &q) const override {
        return rotated(q, q_cos_sin_, "xpos_q");
    }
    Func transform_key(const AttentionProblem &, const Func &k) const override {
        return rotated(k, k_cos_sin_, "xpos_k");
    }
    KeyRotation key_rotation(const AttentionProblem &) const override {
        return {Pairing::Interleaved, rotated_channels(), k_cos_sin_};
    }

private:
    Func rotated(const Func &x, const Func &cos_sin, const std::string &name) const {
        Var d("d"), n("n"), h("h"), b("b");
        Func out(name);
        // Rotates pairs below 2 * (D / 2); an odd last channel passes through, as in the reference.
        out(d, n, h, b) = rotate_by_table(Pairing::Interleaved, rotated_channels(), x, cos_sin, d, n, h, b);
        return out;
    }
    Expr rotated_channels() const { return (head_dim_ / 2) * 2; }

    Expr head_dim_;
    Func q_cos_sin_, k_cos_sin_;
};

}  // namespace

ATTNGEN_REGISTER_SCHEME(xpos, [](const SchemeOptions &) { return std::make_unique<Xpos>(); })

}  // namespace attngen
