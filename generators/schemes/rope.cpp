// Rotary position embedding (Su et al.): q and k rotated by angle pos * inv_freq[f].
// Pairing: Llama/GPT-NeoX rotate_half (c with c + rot_dim/2) or GPT-J interleaved (2i with 2i+1);
// partial rotary rotates the first rot_dim = 2 * len(inv_freq) channels. Scalings (linear, dynamic
// NTK, Llama 3, YaRN) only change inv_freq and the attention factor, which the runtime computes.
// Keys are rotated once per call; cos/sin tables are computed once per call, in float32 like HF
// (vectorized sin_cos, within 1.2e-7 of the exact values).
// attngen-variants: pairing:half pairing:interleaved
#include "../positional_math.h"
#include "../scheme.h"

namespace attngen {
namespace {

using namespace Halide;

class Rope : public Scheme {
public:
    explicit Rope(Pairing pairing) : pairing_(pairing) {}

    std::string name() const override { return "rope"; }

    std::vector<InputSpec> inputs() const override {
        return {{"rope_inv_freq", Float(32), 1, "[rot_dim/2] inverse frequencies (after scaling)"},
                {"q_positions", Int(32), 2, "[batch, q_len] position ids of the queries"},
                {"k_positions", Int(32), 2, "[batch, k_len] position ids of the keys"},
                {"rope_attention_factor", Float(32), 0, "multiplies cos and sin (YaRN; 1 otherwise)"}};
    }

    void setup(const AttentionProblem &p) override {
        rot_dim_ = 2 * p.extent("rope_inv_freq", 0);
        Func inv_freq = p.table("rope_inv_freq");
        Func q_positions = p.table("q_positions"), k_positions = p.table("k_positions");
        Expr factor = p.scalar("rope_attention_factor");
        Var f("f"), n("n"), b("b");
        // One table per side holding (cos, sin): the angle is reduced and both polynomials run once.
        q_cos_sin_ = helper(Func("rope_q_cos_sin"), Placement::PerCall);
        k_cos_sin_ = helper(Func("rope_k_cos_sin"), Placement::PerCall);
        q_cos_sin_(f, n, b) = scaled_cos_sin(cast<float>(q_positions(n, b)) * inv_freq(f), factor);
        k_cos_sin_(f, n, b) = scaled_cos_sin(cast<float>(k_positions(n, b)) * inv_freq(f), factor);
    }

    std::vector<Expr> transform_specializations(const AttentionProblem &p) const override {
        return {rot_dim_ == p.head_dim};
    }

    Func transform_query(const AttentionProblem &, const Func &q) const override {
        return rotated(q, q_cos_sin_, "rope_q");
    }
    Func transform_key(const AttentionProblem &, const Func &k) const override {
        return rotated(k, k_cos_sin_, "rope_k");
    }
    KeyRotation key_rotation(const AttentionProblem &) const override { return {pairing_, rot_dim_, k_cos_sin_}; }

private:
    Func rotated(const Func &x, const Func &cos_sin, const std::string &name) const {
        Var d("d"), n("n"), h("h"), b("b");
        Func out(name);
        out(d, n, h, b) = rotate_by_table(pairing_, rot_dim_, x, cos_sin, d, n, h, b);
        return out;
    }

    Pairing pairing_;
    Expr rot_dim_;
    Func q_cos_sin_, k_cos_sin_;
};

std::unique_ptr<Scheme> make_rope(const SchemeOptions &options) {
    const std::string pairing = option_or(options, "pairing", "half");
    if (pairing != "half" && pairing != "interleaved") {
        throw std::runtime_error("attngen: rope pairing must be half or interleaved, got '" + pairing + "'");
    }
    return std::make_unique<Rope>(pairing == "half" ? Pairing::Half : Pairing::Interleaved);
}

}  // namespace

ATTNGEN_REGISTER_SCHEME(rope, make_rope)

}  // namespace attngen
