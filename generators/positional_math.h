// Positional functions as Halide expressions, shared by the fused schemes and the standalone
// positional kernels. Each mirrors its reference's arithmetic, float32 where the reference
// computes in float32 (the result is an integer bucket, so precision decides boundaries).
#pragma once

#include <Halide.h>

#include <limits>
#include <vector>

namespace attngen {

// T5 `_relative_position_bucket` (relative = key - query). The log branch runs in float32 and
// truncates toward zero, like `.float()` ... `.to(torch.long)` in the reference. `log_span` is
// log(max_distance / max_exact), a Python double in the reference rounded to float32 for the op:
// the runtime computes it in double (GPUs may lack doubles).
inline Halide::Expr t5_bucket(const Halide::Expr &relative, const Halide::Expr &bidirectional,
                              const Halide::Expr &num_buckets, const Halide::Expr &log_span) {
    using namespace Halide;
    Expr buckets = select(bidirectional, num_buckets / 2, num_buckets);
    Expr offset = select(bidirectional && relative > 0, buckets, 0);
    Expr distance = select(bidirectional, max(relative, -relative), max(-relative, 0));
    Expr max_exact = buckets / 2;
    Expr ratio = cast<float>(max(distance, 1)) / cast<float>(max_exact);
    Expr large = max_exact + cast<int>(log(ratio) / log_span * cast<float>(buckets - max_exact));
    large = min(large, buckets - 1);
    return offset + select(distance < max_exact, distance, large);
}

// DeBERTa `make_log_bucket_position` (relative = query - key), as in microsoft/DeBERTa da_utils:
// clamp to +-(max_position - 1), then log buckets beyond bucket_size / 2, in float32. `log_span` is
// log((max_position - 1) / (bucket_size / 2)), a Python double rounded to float32.
inline Halide::Expr deberta_log_bucket(const Halide::Expr &relative, const Halide::Expr &bucket_size,
                                       const Halide::Expr &max_position, const Halide::Expr &log_span) {
    using namespace Halide;
    Expr rel = clamp(relative, 1 - max_position, max_position - 1);
    Expr mid = bucket_size / 2;
    Expr magnitude = select(rel < mid && rel > -mid, mid - 1, max(rel, -rel));
    Expr log_pos =
        cast<int>(ceil(log(cast<float>(magnitude) / cast<float>(mid)) / log_span * cast<float>(mid - 1))) + mid;
    Expr sign = select(rel > 0, 1, select(rel < 0, -1, 0));
    return select(magnitude <= mid, rel, log_pos * sign);
}

// sin and cos of a float32 angle in vector arithmetic. Halide's sin/cos call libm once per lane, which
// made the per-call RoPE/xPos tables (keys x frequencies) cost more than decode attention itself.
// Cody-Waite reduction by pi/2 with a six-piece constant of 5-bit pieces (k * piece is exact for
// |k| < 2^19), then Cephes' minimax polynomials on [-pi/4, pi/4]. Measured against double precision:
// within 1.2e-7 for |x| < 2e5 (libm's float32 results: 6e-8), 2e-5 up to 1e6.
struct SinCos {
    Halide::Expr sin, cos;
};

inline SinCos sin_cos(const Halide::Expr &x) {
    using namespace Halide;
    const float pi_over_2_pieces[] = {1.5625f,
                                      0.0078125f,
                                      0.0004730224609375f,
                                      1.049041748046875e-05f,
                                      3.129243850708008e-07f,
                                      9.920935184482005e-10f};
    Expr k = round(x * 0.636619772367581343f);
    Expr r = x;
    for (float piece : pi_over_2_pieces)
        r = r - k * piece;
    r = strict_float(r);  // keeps the simplifier from folding the pieces back into one constant
    Expr r2 = r * r;
    Expr s = r + r * r2 * (-1.6666654611e-1f + r2 * (8.3321608736e-3f + r2 * -1.9515295891e-4f));
    Expr c = 1.f - 0.5f * r2 +
             r2 * r2 * (4.166664568298827e-2f + r2 * (-1.388731625493765e-3f + r2 * 2.443315711809948e-5f));
    Expr quadrant = cast<int>(k) % 4;  // Halide's % is Euclidean: 0..3 also for negative k
    return {select(quadrant == 0, s, quadrant == 1, c, quadrant == 2, -s, -c),
            select(quadrant == 0, c, quadrant == 1, -s, quadrant == 2, -c, s)};
}

// 2^x in vector arithmetic (Halide's pow and exp call libm once per lane, which made xPos's decay
// tables cost 7x RoPE's). x = n + r with |r| <= 1/2, 2^r by Cephes' exp2f polynomial (within 2e-7
// relative), 2^n = 2 * 2^(n-1) built in the exponent bits (n up to 128). Like powf, it overflows to
// inf from 2^128 on; below 2^-125 it gives 0 (powf's subnormals there scale xPos's rows to nothing too).
inline Halide::Expr exp2_vector(const Halide::Expr &x) {
    using namespace Halide;
    Expr clamped = clamp(x, -125.f, 128.f);
    Expr n = round(clamped);
    Expr r = clamped - n;
    Expr poly = 1.535336188319500e-4f;
    for (float coefficient : {1.339887440266574e-3f, 9.618437357674640e-3f, 5.550332471162809e-2f,
                              2.402264791363012e-1f, 6.931472028550421e-1f, 1.f})
        poly = poly * r + coefficient;
    Expr two_to_n_minus_1 = reinterpret<float>((cast<int>(n) + 126) << 23);
    return select(x >= 128.f, std::numeric_limits<float>::infinity(), x < -125.f, 0.f, (poly * two_to_n_minus_1) * 2.f);
}

// (cos, sin) of an angle, both times `scale`: one table entry of RoPE / xPos (the angle is reduced once).
inline Halide::Tuple scaled_cos_sin(const Halide::Expr &angle, const Halide::Expr &scale) {
    SinCos value = sin_cos(angle);
    return Halide::Tuple(value.cos * scale, value.sin * scale);
}

// xPos's rotation frequency 10000^(-f / (D/2)) (torchscale's fixed_pos_embedding).
inline Halide::Expr xpos_inv_freq(const Halide::Expr &f, const Halide::Expr &head_dim) {
    using namespace Halide;
    return 1.f / pow(10000.f, cast<float>(f) / cast<float>(head_dim / 2));
}

// xPos's per-frequency decay base zeta_f = (2f + 0.4 D) / (1.4 D), as log2 (torchscale's gamma 0.4).
// The decay exp2_vector(log2_zeta * t) carries log2_zeta's float32 rounding times |t|: measured within
// 2.5e-7 relative of zeta^t for 2k positions, 3.4e-6 for 32k (powf: 6e-8; the float32 rounding of zeta
// itself already puts the float32 reference up to 1e-6 from the exact decay there).
inline Halide::Expr xpos_log2_zeta(const Halide::Expr &f, const Halide::Expr &head_dim) {
    using namespace Halide;
    Expr zeta = (2.f * cast<float>(f) + 0.4f * cast<float>(head_dim)) / (1.4f * cast<float>(head_dim));
    return log(zeta) * 1.44269504088896341f;
}

// xPos's decay zeta_f^((position + centre) / scale_base), or its inverse for keys (downscale), from the
// frequency's log2(zeta): a vector exp2 per entry, libm only per frequency.
inline Halide::Expr xpos_decay(const Halide::Expr &log2_zeta, const Halide::Expr &position, const Halide::Expr &centre,
                               const Halide::Expr &scale_base, const Halide::Expr &downscale) {
    using namespace Halide;
    Expr exponent = log2_zeta * ((position + cast<float>(centre)) / scale_base);
    return exp2_vector(select(downscale != 0, -exponent, exponent));
}

// RoPE pairings: which channel pairs with d, which frequency it uses, and the sign of the partner.
enum class Pairing { Half, Interleaved };

struct RotaryIndex {
    Halide::Expr partner, frequency, partner_sign;
};

inline RotaryIndex rotary_index(Pairing pairing, const Halide::Expr &d, const Halide::Expr &rot_dim) {
    using namespace Halide;
    if (pairing == Pairing::Half) {
        Expr half = rot_dim / 2;
        Expr low = d < half;
        return {select(low, d + half, d - half), select(low, d, d - half), select(low, -1.f, 1.f)};
    }
    Expr even = d % 2 == 0;
    return {select(even, d + 1, d - 1), d / 2, select(even, -1.f, 1.f)};
}

// x(d, n, h, b) rotated by the angle of d's frequency, from a (cos, sin) table indexed (frequency, n, b)
// whose entries are already scaled; channels >= rot_dim pass through unchanged.
inline Halide::Expr rotate_by_table(Pairing pairing, const Halide::Expr &rot_dim, const Halide::Func &x,
                                    const Halide::Func &cos_sin, const Halide::Expr &d, const Halide::Expr &n,
                                    const Halide::Expr &h, const Halide::Expr &b) {
    using namespace Halide;
    RotaryIndex index = rotary_index(pairing, d, rot_dim);
    Expr inside = d < rot_dim;
    Expr frequency = clamp(index.frequency, 0, max(rot_dim / 2 - 1, 0));
    // Clamped so bounds inference, which cannot see that the select keeps it in range, stays in range.
    Expr partner = select(inside, clamp(index.partner, 0, max(rot_dim - 1, 0)), d);
    Expr rotated = x(d, n, h, b) * cos_sin(frequency, n, b)[0] +
                   index.partner_sign * x(partner, n, h, b) * cos_sin(frequency, n, b)[1];
    return select(inside, rotated, x(d, n, h, b));
}

// A key transform that is rotate_by_table with per-key (cos, sin) rows (RoPE, xPos). Since
// q . (R_n k) = (R_n^T q) . k, a kernel may instead apply each key's transposed rotation to the query
// inside the product and read keys as they are (transposed_rotation below): the pair swap then falls
// on the query, once per query rather than once per key.
struct KeyRotation {
    Pairing pairing = Pairing::Half;
    Halide::Expr rot_dim;
    Halide::Func cos_sin;  // (frequency, key, b): Tuple(cos, sin), as rotate_by_table reads it

    bool defined() const { return cos_sin.defined(); }
};

// The partner term of R^T x at channel d, without its sine: x(partner(d)) with the sign R^T gives it,
// which is minus the sign R gives (a pair's two signs are opposite); 0 beyond rot_dim. Depends on x
// alone: computed once per query row.
inline Halide::Expr transposed_partner(const KeyRotation &rotation, const Halide::Func &x, const Halide::Expr &d,
                                       const std::vector<Halide::Expr> &rest) {
    using namespace Halide;
    RotaryIndex index = rotary_index(rotation.pairing, d, rotation.rot_dim);
    std::vector<Expr> at_partner{clamp(index.partner, 0, max(rotation.rot_dim - 1, 0))};
    at_partner.insert(at_partner.end(), rest.begin(), rest.end());
    return select(d < rotation.rot_dim, -index.partner_sign * x(at_partner), 0.f);
}

// (R_n^T x)(d) for key n of batch b, from x(d) and transposed_partner(d); channels >= rot_dim pass.
inline Halide::Expr transposed_rotation(const KeyRotation &rotation, const Halide::Expr &x_at_d,
                                        const Halide::Expr &partner_at_d, const Halide::Expr &d, const Halide::Expr &n,
                                        const Halide::Expr &b) {
    using namespace Halide;
    RotaryIndex index = rotary_index(rotation.pairing, d, rotation.rot_dim);
    Expr frequency = clamp(index.frequency, 0, max(rotation.rot_dim / 2 - 1, 0));
    Expr rotated = x_at_d * rotation.cos_sin(frequency, n, b)[0] + partner_at_d * rotation.cos_sin(frequency, n, b)[1];
    return select(d < rotation.rot_dim, rotated, x_at_d);
}

}  // namespace attngen
