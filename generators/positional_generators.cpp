// Standalone positional kernels: RoPE and xPos rotation of a [B, H, L, D] tensor, sinusoid tables,
// and "embeddings + positional table" in one pass (sinusoidal or learned). Algorithms only; the
// schedules are in schedules/positional_schedules.cpp.
#include "../schedules/positional_schedules.h"
#include "positional_math.h"

namespace attngen {
namespace {

using namespace Halide;

// Sinusoid value at (channel c, position p) for `channels` logical channels, in double precision.
// Conventions: 0 = paper / pytorch examples interleaved [sin, cos, ...], w_i = base^(-2i/d);
// 1 = tensor2tensor [sin | cos], r_i = base^(-i/(n-1)), zero last column for odd d;
// 2 = Transformer-XL [sin | cos], f_i = base^(-2i/d), 2*ceil(d/2) columns.
Expr sinusoid(const Expr &convention, const Expr &c, const Expr &p, const Expr &channels, const Expr &base) {
    Expr position = cast<double>(p);
    Expr log_base = log(cast<double>(base));
    Expr d = cast<double>(channels);
    // paper
    Expr pair = c / 2;
    Expr paper_angle = position * exp(cast<double>(2 * pair) * -log_base / d);
    Expr paper = select(c % 2 == 0, sin(paper_angle), cos(paper_angle));
    // tensor2tensor
    Expr n = channels / 2;
    Expr t2t_index = select(c < n, c, c - n);
    Expr t2t_angle = position * exp(cast<double>(t2t_index) * -log_base / cast<double>(max(n - 1, 1)));
    Expr t2t = select(c < n, sin(t2t_angle), select(c < 2 * n, cos(t2t_angle), Expr(0.0)));
    // Transformer-XL
    Expr half = (channels + 1) / 2;
    Expr txl_index = select(c < half, c, c - half);
    Expr txl_angle = position * exp(cast<double>(2 * txl_index) * -log_base / d);
    Expr txl = select(c < half, sin(txl_angle), cos(txl_angle));
    return cast<float>(select(convention == 0, paper, convention == 1, t2t, txl));
}

class RopeGenerator : public Generator<RopeGenerator> {
public:
    GeneratorParam<std::string> pairing{"pairing", "half"};
    Input<Buffer<float>> x{"x", 4};                    // [B, H, L, D]
    Input<Buffer<int32_t>> positions{"positions", 2};  // [B, L]
    Input<Buffer<float>> inv_freq{"inv_freq", 1};      // [rot_dim / 2]
    Input<float> attention_factor{"attention_factor"};
    Output<Buffer<float>> out{"out", 4};

    void generate() {
        Var d("d"), n("n"), h("h"), b("b"), f("f");
        Expr rot_dim = 2 * inv_freq.dim(0).extent();
        cos_sin_(f, n, b) = scaled_cos_sin(cast<float>(positions(n, b)) * inv_freq(f), attention_factor);
        const Pairing rotation = pairing.value() == "half" ? Pairing::Half : Pairing::Interleaved;
        out(d, n, h, b) = rotate_by_table(rotation, rot_dim, x, cos_sin_, d, n, h, b);
    }

    void schedule() {
        constrain_like_input(x, out);
        x.set_estimates({{0, 64}, {0, 512}, {0, 8}, {0, 1}});
        positions.set_estimates({{0, 512}, {0, 1}});
        inv_freq.set_estimates({{0, 32}});
        out.set_estimates({{0, 64}, {0, 512}, {0, 8}, {0, 1}});
        if (!auto_schedule) schedule_rotation(out, cos_sin_, {}, get_target());
    }

private:
    Func cos_sin_{"rope_cos_sin"};
};

class XposGenerator : public Generator<XposGenerator> {
public:
    Input<Buffer<float>> x{"x", 4};                    // [B, H, L, D]
    Input<Buffer<int32_t>> positions{"positions", 2};  // [B, L]
    Input<float> scale_base{"scale_base"};
    Input<int32_t> centre{"centre"};
    Input<int32_t> downscale{"downscale"};
    Output<Buffer<float>> out{"out", 4};

    void generate() {
        Var d("d"), n("n"), h("h"), b("b"), f("f");
        Expr head_dim = x.dim(0).extent();
        // pow and log call libm once per lane: once per frequency here (as in the fused xPos scheme).
        inv_freq_(f) = xpos_inv_freq(f, head_dim);
        log2_zeta_(f) = xpos_log2_zeta(f, head_dim);
        Expr position = cast<float>(positions(n, b));
        cos_sin_(f, n, b) =
            scaled_cos_sin(position * inv_freq_(f), xpos_decay(log2_zeta_(f), position, centre, scale_base, downscale));
        out(d, n, h, b) = rotate_by_table(Pairing::Interleaved, (head_dim / 2) * 2, x, cos_sin_, d, n, h, b);
    }

    void schedule() {
        constrain_like_input(x, out);
        x.set_estimates({{0, 64}, {0, 512}, {0, 8}, {0, 1}});
        positions.set_estimates({{0, 512}, {0, 1}});
        out.set_estimates({{0, 64}, {0, 512}, {0, 8}, {0, 1}});
        if (!auto_schedule) schedule_rotation(out, cos_sin_, {inv_freq_, log2_zeta_}, get_target());
    }

private:
    Func cos_sin_{"xpos_cos_sin"}, inv_freq_{"xpos_inv_freq"}, log2_zeta_{"xpos_log2_zeta"};
};

class SinusoidTableGenerator : public Generator<SinusoidTableGenerator> {
public:
    Input<int32_t> convention{"convention"};
    Input<int32_t> channels{"channels"};
    Input<int32_t> position_offset{"position_offset"};
    Input<float> base{"base"};
    Output<Buffer<float>> out{"out", 2};  // [length, columns]

    void generate() {
        Var c("c"), p("p");
        out(c, p) = sinusoid(convention, c, p + position_offset, channels, base);
    }

    void schedule() {
        out.dim(0).set_min(0).set_stride(1);
        out.dim(1).set_min(0);
        out.set_estimates({{0, 128}, {0, 512}});
        if (!auto_schedule) schedule_table(out, get_target());
    }
};

class AddSinusoidGenerator : public Generator<AddSinusoidGenerator> {
public:
    Input<Buffer<float>> x{"x", 3};                    // [B, L, C]
    Input<Buffer<int32_t>> positions{"positions", 2};  // [B, L]
    Input<int32_t> convention{"convention"};
    Input<float> base{"base"};
    Output<Buffer<float>> out{"out", 3};

    void generate() {
        Var c("c"), n("n"), b("b");
        out(c, n, b) = x(c, n, b) + sinusoid(convention, c, positions(n, b), x.dim(0).extent(), base);
    }

    void schedule() {
        constrain_like_input(x, out);
        x.set_estimates({{0, 512}, {0, 512}, {0, 1}});
        positions.set_estimates({{0, 512}, {0, 1}});
        out.set_estimates({{0, 512}, {0, 512}, {0, 1}});
        if (!auto_schedule) schedule_embedding(out, get_target());
    }
};

class AddLearnedGenerator : public Generator<AddLearnedGenerator> {
public:
    Input<Buffer<float>> x{"x", 3};                    // [B, L, C]
    Input<Buffer<int32_t>> positions{"positions", 2};  // [B, L]
    Input<Buffer<float>> table{"table", 2};            // [max_positions, C]
    Output<Buffer<float>> out{"out", 3};

    void generate() {
        Var c("c"), n("n"), b("b");
        // The runtime rejects out-of-range positions; the clamp keeps the kernel memory-safe regardless.
        Expr row = clamp(positions(n, b), 0, table.dim(1).extent() - 1);
        out(c, n, b) = x(c, n, b) + table(c, row);
    }

    void schedule() {
        constrain_like_input(x, out);
        table.dim(0).set_min(0).set_stride(1);
        table.dim(1).set_min(0);
        x.set_estimates({{0, 512}, {0, 512}, {0, 1}});
        positions.set_estimates({{0, 512}, {0, 1}});
        table.set_estimates({{0, 512}, {0, 1024}});
        out.set_estimates({{0, 512}, {0, 512}, {0, 1}});
        if (!auto_schedule) schedule_embedding(out, get_target());
    }
};

}  // namespace
}  // namespace attngen

HALIDE_REGISTER_GENERATOR(attngen::RopeGenerator, rope)
HALIDE_REGISTER_GENERATOR(attngen::XposGenerator, xpos)
HALIDE_REGISTER_GENERATOR(attngen::SinusoidTableGenerator, sinusoid_table)
HALIDE_REGISTER_GENERATOR(attngen::AddSinusoidGenerator, add_sinusoid)
HALIDE_REGISTER_GENERATOR(attngen::AddLearnedGenerator, add_learned)
