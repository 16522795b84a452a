// Self-test of the attngen::ref reference: mathematical identities and known values only
// (no JSON / golden files). Standalone: g++ -std=c++17 reference.cpp reference_selftest.cpp
// Prints one line per check and closes with "N passed, N failed"; exit status 1 on any failure.
#include "reference.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <functional>
#include <initializer_list>
#include <random>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

using namespace attngen::ref;

namespace {

int g_passed = 0;
int g_failed = 0;

void check(bool ok, const std::string &name, const std::string &detail = "") {
    if (ok) {
        ++g_passed;
        std::printf("PASS %s\n", name.c_str());
    } else {
        ++g_failed;
        std::printf("FAIL %s%s%s\n", name.c_str(), detail.empty() ? "" : ": ", detail.c_str());
    }
}

double max_abs_diff(const std::vector<double> &a, const std::vector<double> &b) {
    if (a.size() != b.size()) return INFINITY;
    double m = 0;
    for (std::size_t i = 0; i < a.size(); ++i)
        m = std::fmax(m, std::fabs(a[i] - b[i]));
    return m;
}

std::string fmt(double x) {
    char buf[64];
    std::snprintf(buf, sizeof buf, "%.3g", x);
    return buf;
}

void check_close(const std::vector<double> &a, const std::vector<double> &b, double tol, const std::string &name) {
    const double d = max_abs_diff(a, b);
    check(d <= tol, name, "max abs diff " + fmt(d) + " > " + fmt(tol));
}

std::vector<double> random_vec(std::mt19937 &rng, std::size_t n, double lo = -1, double hi = 1) {
    std::uniform_real_distribution<double> dist(lo, hi);
    std::vector<double> v(n);
    for (double &x : v)
        x = dist(rng);
    return v;
}

Problem make_problem(int B, int H, int Hkv, int Lq, int Lk, int D, Mask mask, unsigned seed) {
    std::mt19937 rng(seed);
    Problem p;
    p.batch = B;
    p.heads = H;
    p.kv_heads = Hkv;
    p.q_len = Lq;
    p.k_len = Lk;
    p.head_dim = D;
    p.mask = mask;
    p.q = random_vec(rng, static_cast<std::size_t>(B * H * Lq * D));
    p.k = random_vec(rng, static_cast<std::size_t>(B * Hkv * Lk * D));
    p.v = random_vec(rng, static_cast<std::size_t>(B * Hkv * Lk * D));
    return p;
}

// One instance of every scheme (plus variants) with random tables sized for p.
std::vector<std::pair<std::string, Scheme>> all_schemes(const Problem &p, unsigned seed) {
    std::mt19937 rng(seed);
    const auto H = static_cast<std::size_t>(p.heads), D = static_cast<std::size_t>(p.head_dim),
               Lk = static_cast<std::size_t>(p.k_len);
    std::vector<std::pair<std::string, Scheme>> s;
    s.emplace_back("sdpa", Sdpa{});
    s.emplace_back("alibi", Alibi{alibi_slopes(p.heads), false});
    s.emplace_back("alibi_sym", Alibi{alibi_slopes(p.heads), true});
    s.emplace_back("t5_bidir", T5{random_vec(rng, 32 * H), 32, 128, true});
    s.emplace_back("t5_unidir", T5{random_vec(rng, 32 * H), 32, 128, false});
    s.emplace_back("t5_short", T5{random_vec(rng, 8 * H), 8, 6, true});  // log branch active
    s.emplace_back("shaw", Shaw{2, random_vec(rng, 5 * D), random_vec(rng, 5 * D)});
    s.emplace_back("shaw_nov", Shaw{3, random_vec(rng, 7 * D), {}});
    s.emplace_back("txl", TransformerXL{random_vec(rng, H * Lk * D), random_vec(rng, H * D), random_vec(rng, H * D)});
    s.emplace_back("deberta", Deberta{random_vec(rng, H * 8 * D), random_vec(rng, H * 8 * D), 4, 0, 0});
    s.emplace_back("deberta_bucket", Deberta{random_vec(rng, H * 8 * D), random_vec(rng, H * 8 * D), 4, 4, 8});
    s.emplace_back("rope_half", Rope{Pairing::Half, 0, rope_inv_freq(p.head_dim, 10000), {}, {}, 1});
    if (p.head_dim >= 4) {
        const int rot = (p.head_dim / 2) % 2 == 0 ? p.head_dim / 2 : p.head_dim;
        s.emplace_back("rope_interleaved_partial",
                       Rope{Pairing::Interleaved, rot, rope_inv_freq(rot, 10000), {}, {}, 1.1});
    }
    s.emplace_back("xpos", Xpos{});
    return s;
}

std::size_t idx4(int a, int b, int c, int d, int B_, int C_, int D_) {
    return ((static_cast<std::size_t>(a) * static_cast<std::size_t>(B_) + static_cast<std::size_t>(b)) *
                static_cast<std::size_t>(C_) +
            static_cast<std::size_t>(c)) *
               static_cast<std::size_t>(D_) +
           static_cast<std::size_t>(d);
}

// ---- 1. probabilities are proper softmax rows; masked entries are 0; empty rows are 0 --------
void test_softmax_rows() {
    struct MaskCase {
        const char *name;
        Mask mask;
        int window;
        std::vector<int> kv_len;
    };
    const std::vector<MaskCase> masks = {{"none", Mask::None, 0, {}},
                                         {"causal", Mask::Causal, 0, {}},
                                         {"window3", Mask::SlidingWindow, 3, {}},
                                         {"window0", Mask::SlidingWindow, 0, {}},
                                         {"causal_kvlen", Mask::Causal, 0, {0, 6}},
                                         {"none_kvlen", Mask::None, 0, {9, 2}}};
    for (const auto &mc : masks) {
        Problem p = make_problem(2, 4, 2, 5, 9, 8, mc.mask, 11);
        p.window = mc.window;
        p.kv_len = mc.kv_len;
        for (const auto &[name, scheme] : all_schemes(p, 5)) {
            const std::vector<double> probs = probabilities(p, scheme);
            const std::vector<double> out = attention(p, scheme);
            double worst_sum = 0;
            bool masked_zero = true, empty_rows_zero = true;
            for (int b = 0; b < p.batch; ++b)
                for (int h = 0; h < p.heads; ++h)
                    for (int i = 0; i < p.q_len; ++i) {
                        double sum = 0;
                        bool any = false;
                        for (int j = 0; j < p.k_len; ++j) {
                            const double w = probs[idx4(b, h, i, j, p.heads, p.q_len, p.k_len)];
                            if (is_allowed(p, b, i, j)) {
                                any = true;
                                if (!(w >= 0)) masked_zero = false;
                            } else if (w != 0.0) {
                                masked_zero = false;
                            }
                            sum += w;
                        }
                        if (any) {
                            worst_sum = std::fmax(worst_sum, std::fabs(sum - 1));
                        } else {
                            if (sum != 0.0) empty_rows_zero = false;
                            for (int c = 0; c < p.head_dim; ++c)
                                if (out[idx4(b, h, i, c, p.heads, p.q_len, p.head_dim)] != 0.0) empty_rows_zero = false;
                        }
                    }
            const std::string tag = std::string("softmax_rows[") + mc.name + "," + name + "]";
            check(worst_sum <= 1e-12 && masked_zero && empty_rows_zero, tag,
                  "row-sum err " + fmt(worst_sum) + (masked_zero ? "" : ", masked entry != 0") +
                      (empty_rows_zero ? "" : ", fully masked row not zero"));
        }
    }
}

// ---- 2. out == probs @ v (for every scheme without a value term) ------------------------------
void test_out_is_probs_times_v() {
    Problem p = make_problem(2, 4, 2, 6, 6, 8, Mask::Causal, 21);
    for (const auto &[name, scheme] : all_schemes(p, 6)) {
        if (name == "shaw") continue;  // has a value term; checked separately
        const auto probs = probabilities(p, scheme);
        const auto out = attention(p, scheme);
        std::vector<double> ref(out.size(), 0.0);
        const int group = p.heads / p.kv_heads;
        for (int b = 0; b < p.batch; ++b)
            for (int h = 0; h < p.heads; ++h)
                for (int i = 0; i < p.q_len; ++i)
                    for (int j = 0; j < p.k_len; ++j)
                        for (int c = 0; c < p.head_dim; ++c)
                            ref[idx4(b, h, i, c, p.heads, p.q_len, p.head_dim)] +=
                                probs[idx4(b, h, i, j, p.heads, p.q_len, p.k_len)] *
                                p.v[idx4(b, h / group, j, c, p.kv_heads, p.k_len, p.head_dim)];
        check_close(out, ref, 1e-13, "out_is_probs_at_v[" + name + "]");
    }
}

// ---- 3. GQA equals MHA with K/V repeated (repeat_interleave over heads) -----------------------
Problem repeat_kv(const Problem &p) {
    Problem r = p;
    r.kv_heads = p.heads;
    const int group = p.heads / p.kv_heads;
    const std::size_t row = static_cast<std::size_t>(p.k_len) * static_cast<std::size_t>(p.head_dim);
    r.k.clear();
    r.v.clear();
    for (int b = 0; b < p.batch; ++b)
        for (int h = 0; h < p.heads; ++h) {
            const std::size_t off = (static_cast<std::size_t>(b) * static_cast<std::size_t>(p.kv_heads) +
                                     static_cast<std::size_t>(h / group)) *
                                    row;
            r.k.insert(r.k.end(), p.k.begin() + static_cast<std::ptrdiff_t>(off),
                       p.k.begin() + static_cast<std::ptrdiff_t>(off + row));
            r.v.insert(r.v.end(), p.v.begin() + static_cast<std::ptrdiff_t>(off),
                       p.v.begin() + static_cast<std::ptrdiff_t>(off + row));
        }
    return r;
}

void test_gqa() {
    for (int hkv : {1, 2}) {
        Problem p = make_problem(2, 4, hkv, 5, 7, 8, Mask::Causal, 31u + static_cast<unsigned>(hkv));
        const Problem r = repeat_kv(p);
        for (const auto &[name, scheme] : all_schemes(p, 7)) {
            const double dp = max_abs_diff(probabilities(p, scheme), probabilities(r, scheme));
            const double dout = max_abs_diff(attention(p, scheme), attention(r, scheme));
            check(dp <= 1e-14 && dout <= 1e-14, "gqa_eq_repeated_kv[Hkv=" + std::to_string(hkv) + "," + name + "]",
                  "probs " + fmt(dp) + ", out " + fmt(dout));
        }
    }
}

// ---- 4. ALiBi: paper form -slope*(p-j) == fairseq form +slope*j under causal ---------------------
void test_alibi_forms() {
    for (int H : {6, 8}) {
        Problem p = make_problem(2, H, H, 9, 9, 16, Mask::Causal, 41);
        const std::vector<double> slopes = alibi_slopes(H);
        const auto probs = probabilities(p, Alibi{slopes, false});
        // Independent evaluation with the fairseq bias slope_h * j.
        std::vector<double> ref(probs.size(), 0.0);
        const double scale = 1.0 / std::sqrt(16.0);
        for (int b = 0; b < p.batch; ++b)
            for (int h = 0; h < H; ++h)
                for (int i = 0; i < p.q_len; ++i) {
                    std::vector<double> s(static_cast<std::size_t>(p.k_len));
                    double mx = -INFINITY, sum = 0;
                    for (int j = 0; j <= i; ++j) {
                        double d = 0;
                        for (int c = 0; c < 16; ++c)
                            d += p.q[idx4(b, h, i, c, H, p.q_len, 16)] * p.k[idx4(b, h, j, c, H, p.k_len, 16)];
                        s[static_cast<std::size_t>(j)] = d * scale + slopes[static_cast<std::size_t>(h)] * j;
                        mx = std::fmax(mx, s[static_cast<std::size_t>(j)]);
                    }
                    for (int j = 0; j <= i; ++j)
                        sum += std::exp(s[static_cast<std::size_t>(j)] - mx);
                    for (int j = 0; j <= i; ++j)
                        ref[idx4(b, h, i, j, H, p.q_len, p.k_len)] =
                            std::exp(s[static_cast<std::size_t>(j)] - mx) / sum;
                }
        check_close(probs, ref, 1e-14, "alibi_paper_vs_fairseq_form[H=" + std::to_string(H) + "]");
        check_close(probs, probabilities(p, Alibi{slopes, true}), 1e-15,
                    "alibi_symmetric_eq_plain_under_causal[H=" + std::to_string(H) + "]");
        check(max_abs_diff(probs, probabilities(p, Sdpa{})) > 1e-3,
              "alibi_differs_from_sdpa[H=" + std::to_string(H) + "]");
    }
}

// ---- 5. ALiBi slopes ---------------------------------------------------------------------------
void test_alibi_slopes() {
    const auto s8 = alibi_slopes(8);
    bool ok = s8.size() == 8;
    for (int h = 0; ok && h < 8; ++h)
        ok = s8[static_cast<std::size_t>(h)] == std::ldexp(1.0, -(h + 1));
    check(ok, "alibi_slopes(8) == 2^-(h+1)");
    // n = 6: c = 4 -> slopes(4) = 2^-2, 2^-4, 2^-6, 2^-8, then slopes(8)[0::2][:2] = 2^-1, 2^-3.
    const std::vector<double> e6 = {0.25, 0.0625, 0.015625, 0.00390625, 0.5, 0.125};
    check(alibi_slopes(6) == e6, "alibi_slopes(6) == [2^-2,2^-4,2^-6,2^-8,2^-1,2^-3]");
    // n = 12: slopes(8) then the odd powers of slopes(16): 2^-0.5, 2^-1.5, 2^-2.5, 2^-3.5.
    const auto s12 = alibi_slopes(12);
    ok = s12.size() == 12;
    for (int h = 0; ok && h < 8; ++h)
        ok = s12[static_cast<std::size_t>(h)] == std::ldexp(1.0, -(h + 1));
    for (int m = 0; ok && m < 4; ++m)
        ok = std::fabs(s12[static_cast<std::size_t>(8 + m)] - std::pow(2.0, -0.5 - m)) < 1e-15;
    check(ok, "alibi_slopes(12) == 2^-1..2^-8, 2^-0.5..2^-3.5");
    // n = 20 printed by Python's get_slopes (its float rounding is mirrored exactly).
    const std::vector<double> e20 = {
        0.7071067811865476,   0.5000000000000001,  0.35355339059327384,  0.25000000000000006,  0.17677669529663692,
        0.12500000000000006,  0.08838834764831849, 0.06250000000000004,  0.044194173824159244, 0.03125000000000002,
        0.022097086912079626, 0.01562500000000001, 0.011048543456039816, 0.007812500000000007, 0.005524271728019908,
        0.003906250000000004, 0.8408964152537145,  0.5946035575013604,   0.42044820762685714,  0.2973017787506802};
    check(alibi_slopes(20) == e20, "alibi_slopes(20) bit-identical to Python get_slopes(20)");
}

// ---- 6. T5 buckets -------------------------------------------------------------------------------
void test_t5_buckets() {
    bool sym = true, small = true, uni_future = true, uni_small = true, mono = true;
    for (int r = 1; r <= 300; ++r)
        if (t5_bucket(r, true, 32, 128) != t5_bucket(-r, true, 32, 128) + 16) sym = false;
    for (int r = 0; r < 8; ++r)
        if (t5_bucket(-r, true, 32, 128) != r || t5_bucket(r, true, 32, 128) != (r ? 16 + r : 0)) small = false;
    for (int r = 0; r <= 300; ++r)
        if (t5_bucket(r, false, 32, 128) != 0) uni_future = false;
    for (int r = 0; r < 16; ++r)
        if (t5_bucket(-r, false, 32, 128) != r) uni_small = false;
    for (int r = 1; r <= 300; ++r) {
        if (t5_bucket(-r, true, 32, 128) < t5_bucket(-(r - 1), true, 32, 128)) mono = false;
        if (t5_bucket(-r, false, 32, 128) < t5_bucket(-(r - 1), false, 32, 128)) mono = false;
    }
    check(sym, "t5_bidirectional: bucket(+r) == bucket(-r) + 16 (future keys get upper half)");
    check(small, "t5_bidirectional: exact buckets |r| < 8");
    check(uni_future, "t5_unidirectional: every future key (j - i > 0) is bucket 0");
    check(uni_small, "t5_unidirectional: exact buckets for past distance < 16");
    check(mono, "t5: bucket non-decreasing in |j - i|");
    // Log branch values: bidir r=-20: 8 + trunc(ln(2.5)/ln(16)*8 = 2.64) = 10; +20 -> 26;
    // unidir r=-20: 16 + trunc(ln(1.25)/ln(8)*16 = 1.72) = 17; saturation at num_buckets-1.
    check(t5_bucket(-20, true, 32, 128) == 10 && t5_bucket(20, true, 32, 128) == 26 &&
              t5_bucket(-20, false, 32, 128) == 17 && t5_bucket(-8, true, 32, 128) == 8 &&
              t5_bucket(-16, false, 32, 128) == 16,
          "t5: log-branch spot values");
    check(t5_bucket(-127, true, 32, 128) == 15 && t5_bucket(-1000, true, 32, 128) == 15 &&
              t5_bucket(1000, true, 32, 128) == 31 && t5_bucket(-1000, false, 32, 128) == 31,
          "t5: saturation at num_buckets-1 (per half)");
    // The float32 log branch must agree with a float64 re-derivation on -300..300 (contract note).
    bool f64_agree = true;
    for (int r = -300; r <= 300; ++r)
        for (bool bd : {true, false}) {
            int nb = 32, ret = 0;
            long long a = r;
            if (bd) {
                nb /= 2;
                if (a > 0) ret += nb;
                a = a < 0 ? -a : a;
            } else {
                a = a < 0 ? -a : 0;
            }
            const int me = nb / 2;
            int b;
            if (a < me) {
                b = ret + static_cast<int>(a);
            } else {
                const double x = std::log(static_cast<double>(a) / me) / std::log(128.0 / me) * (nb - me);
                b = ret + std::min(me + static_cast<int>(x), nb - 1);
            }
            if (b != t5_bucket(r, bd, 32, 128)) f64_agree = false;
        }
    check(f64_agree, "t5: float32 log branch == float64 re-derivation on -300..300");
}

// ---- 7. DeBERTa log buckets ------------------------------------------------------------------------
void test_deberta_buckets() {
    bool ident = true, odd = true;
    for (int r = -4; r <= 4; ++r)
        ident = ident && deberta_log_bucket(r, 8, 32) == r;
    for (int r = -128; r <= 128; ++r)
        ident = ident && deberta_log_bucket(r, 256, 512) == r;
    for (int r = 0; r <= 600; ++r) {
        odd = odd && deberta_log_bucket(-r, 8, 32) == -deberta_log_bucket(r, 8, 32);
        odd = odd && deberta_log_bucket(-r, 256, 512) == -deberta_log_bucket(r, 256, 512);
    }
    check(ident, "deberta_log_bucket: |rel| <= bucket_size/2 maps to itself");
    check(odd, "deberta_log_bucket: odd function of rel");
    // bucket 8 / max 32: mid 4; ceil(ln(r/4)/ln(7.75)*3) + 4: r=5,6 -> 5; r=8 -> 6; r=31 -> 7; clamp.
    check(deberta_log_bucket(5, 8, 32) == 5 && deberta_log_bucket(6, 8, 32) == 5 && deberta_log_bucket(8, 8, 32) == 6 &&
              deberta_log_bucket(31, 8, 32) == 7 && deberta_log_bucket(-31, 8, 32) == -7 &&
              deberta_log_bucket(32, 8, 32) == 7 && deberta_log_bucket(-600, 8, 32) == -7,
          "deberta_log_bucket(8,32) spot values");
    check(deberta_log_bucket(511, 256, 512) == 255 && deberta_log_bucket(-511, 256, 512) == -255 &&
              deberta_log_bucket(600, 256, 512) == 255 && deberta_log_bucket(129, 256, 512) == 129,
          "deberta_log_bucket(256,512) spot values");
    bool f64_agree = true;
    for (int r = -600; r <= 600; ++r)
        for (auto [bs, mp] : {std::pair<int, int>{256, 512}, std::pair<int, int>{8, 32}}) {
            const int mid = bs / 2;
            const int rc = std::max(-(mp - 1), std::min(r, mp - 1));
            const int a = std::abs(rc);
            int e = rc;
            if (a > mid) {
                const double lp = std::ceil(std::log(static_cast<double>(a) / mid) /
                                            std::log(static_cast<double>(mp - 1) / mid) * (mid - 1)) +
                                  mid;
                e = (rc > 0 ? 1 : -1) * static_cast<int>(lp);
            }
            if (e != deberta_log_bucket(r, bs, mp)) f64_agree = false;
        }
    check(f64_agree, "deberta_log_bucket: float32 == float64 evaluation on -600..600 (256/512, 8/32)");
}

// ---- 8. RoPE pairings and shift invariance ---------------------------------------------------
// Permute channels from the half layout into the interleaved layout: (c, c+R/2) -> (2c, 2c+1).
std::vector<double> half_to_interleaved(const std::vector<double> &x, int D, int R) {
    std::vector<double> y = x;
    for (std::size_t row = 0; row < x.size() / static_cast<std::size_t>(D); ++row) {
        const std::size_t o = row * static_cast<std::size_t>(D);
        for (int c = 0; c < R / 2; ++c) {
            y[o + static_cast<std::size_t>(2 * c)] = x[o + static_cast<std::size_t>(c)];
            y[o + static_cast<std::size_t>(2 * c + 1)] = x[o + static_cast<std::size_t>(c + R / 2)];
        }
    }
    return y;
}

void test_rope_pairing() {
    for (int R : {8, 4}) {
        Problem p = make_problem(1, 2, 2, 7, 7, 8, Mask::Causal, 51);
        const Rope half{Pairing::Half, R, rope_inv_freq(R, 10000), {}, {}, 1};
        const Rope inter{Pairing::Interleaved, R, rope_inv_freq(R, 10000), {}, {}, 1};
        const std::string tag = "[rot=" + std::to_string(R) + "]";
        check(max_abs_diff(probabilities(p, half), probabilities(p, inter)) > 1e-4,
              "rope_half_vs_interleaved_differ" + tag);
        Problem perm = p;
        perm.q = half_to_interleaved(p.q, 8, R);
        perm.k = half_to_interleaved(p.k, 8, R);
        check_close(probabilities(p, half), probabilities(perm, inter), 1e-14,
                    "rope_half_eq_interleaved_on_permuted_channels" + tag);
        check_close(attention(p, half), attention(perm, inter), 1e-14,
                    "rope_half_eq_interleaved_on_permuted_channels_out" + tag);
        // rotated q/k: permuted half rotation == interleaved rotation of the permuted input
        const auto th = rope_apply(p, half), ti = rope_apply(perm, inter);
        check_close(half_to_interleaved(th.q, 8, R), ti.q, 1e-15, "rope_rotation_permutes" + tag);
        if (R < 8) {  // pass-through channels
            bool same = true;
            for (std::size_t r = 0; r < p.q.size() / 8; ++r)
                for (std::size_t c = static_cast<std::size_t>(R); c < 8; ++c)
                    same = same && th.q[r * 8 + c] == p.q[r * 8 + c] && ti.k[r * 8 + c] == perm.k[r * 8 + c];
            check(same, "rope_partial_passes_channels_ge_rot_dim" + tag);
        }
    }
    // Rotation preserves norms (attention_factor 1) and matches the contract formula at one point.
    Problem p = make_problem(1, 1, 1, 1, 3, 4, Mask::None, 52);
    const auto inv = rope_inv_freq(4, 10000);  // 1, 0.01
    const auto t = rope_apply(p, Rope{Pairing::Half, 0, inv, {}, {}, 1});
    const double pos = 2;  // q row 0 sits at p = k_len - q_len + 0 = 2
    const double e0 = p.q[0] * std::cos(pos) - p.q[2] * std::sin(pos);
    const double e3 = p.q[3] * std::cos(pos * 0.01) + p.q[1] * std::sin(pos * 0.01);
    check(std::fabs(t.q[0] - e0) < 1e-15 && std::fabs(t.q[3] - e3) < 1e-15 && std::fabs(inv[1] - 0.01) < 1e-17,
          "rope_half_formula_spot_value");
}

void test_shift_invariance() {
    Problem p = make_problem(2, 2, 1, 6, 6, 8, Mask::Causal, 61);
    auto shifted = [&](double off, bool q) {
        const int L = q ? p.q_len : p.k_len;
        std::vector<double> pos;
        for (int b = 0; b < p.batch; ++b)
            for (int i = 0; i < L; ++i)
                pos.push_back((q ? p.k_len - p.q_len + i : i) + off);
        return pos;
    };
    for (Pairing pr : {Pairing::Half, Pairing::Interleaved}) {
        const std::string tag = pr == Pairing::Half ? "[half]" : "[interleaved]";
        Rope r{pr, 0, rope_inv_freq(8, 10000), {}, {}, 1};
        const auto base = probabilities(p, r);
        r.q_positions = shifted(1000, true);
        r.k_positions = shifted(1000, false);
        check_close(probabilities(p, r), base, 1e-11, "rope_shift_invariance" + tag);
        r.q_positions = shifted(0, true);
        r.k_positions = shifted(0, false);
        check_close(probabilities(p, r), base, 0, "rope_explicit_default_positions" + tag);
    }
    Xpos x;
    const auto base = probabilities(p, x);
    x.q_positions = shifted(37, true);
    x.k_positions = shifted(37, false);
    check_close(probabilities(p, x), base, 1e-12, "xpos_shift_invariance");
    check(
        max_abs_diff(base, probabilities(p, Rope{Pairing::Interleaved, 0, rope_inv_freq(8, 10000), {}, {}, 1})) > 1e-6,
        "xpos_differs_from_rope");
    // With a huge scale_base the decay vanishes: xPos == interleaved RoPE with theta_i = 10000^(-i/(D/2)).
    Xpos flat;
    flat.scale_base = 1e300;
    check_close(probabilities(p, flat),
                probabilities(p, Rope{Pairing::Interleaved, 0, rope_inv_freq(8, 10000), {}, {}, 1}), 1e-14,
                "xpos_without_decay_eq_interleaved_rope");
    // Default centre = floor(-k_len/2): explicit centre -3 for k_len 6 gives the same q', k'.
    Xpos c3;
    c3.centre = -3;
    check_close(xpos_apply(p, c3).q, xpos_apply(p, Xpos{}).q, 0, "xpos_default_centre_is_floor(-k_len/2)");
    Problem odd = make_problem(1, 1, 1, 7, 7, 8, Mask::Causal, 62);
    Xpos c4;
    c4.centre = -4;  // Python -7 // 2 == -4
    check_close(xpos_apply(odd, c4).k, xpos_apply(odd, Xpos{}).k, 0, "xpos_default_centre_odd_len_floors");
    // Spot value of the xPos transform (query row 0 at n = 0 -> angle 0, decay zeta_0^(centre/512)).
    const auto t = xpos_apply(odd, Xpos{});
    const double s0 = std::pow((0 + 0.4 * 8) / (1.4 * 8), -4.0 / 512);
    check(std::fabs(t.q[0] - odd.q[0] * s0) < 1e-15 && std::fabs(t.k[1] - odd.k[1] / s0) < 1e-15,
          "xpos_spot_value_row0");
}

// ---- 9. chunked / decode queries equal the last rows of the full self-attention ------------------
void test_chunk_consistency() {
    const int L = 9, D = 8, H = 4, Hkv = 2;
    for (Mask m : {Mask::Causal, Mask::None}) {
        Problem full = make_problem(1, H, Hkv, L, L, D, m, 71);
        for (int lq : {3, 1}) {
            Problem chunk = full;
            chunk.q_len = lq;
            chunk.q.clear();
            for (int h = 0; h < H; ++h)
                for (int i = L - lq; i < L; ++i)
                    for (int c = 0; c < D; ++c)
                        chunk.q.push_back(full.q[idx4(0, h, i, c, H, L, D)]);
            for (const auto &[name, scheme] : all_schemes(full, 8)) {
                const auto pf = probabilities(full, scheme), pc = probabilities(chunk, scheme);
                const auto of = attention(full, scheme), oc = attention(chunk, scheme);
                double dp = 0, dout = 0;
                for (int h = 0; h < H; ++h)
                    for (int i = 0; i < lq; ++i) {
                        for (int j = 0; j < L; ++j)
                            dp = std::fmax(
                                dp, std::fabs(pc[idx4(0, h, i, j, H, lq, L)] - pf[idx4(0, h, L - lq + i, j, H, L, L)]));
                        for (int c = 0; c < D; ++c)
                            dout = std::fmax(dout, std::fabs(oc[idx4(0, h, i, c, H, lq, D)] -
                                                             of[idx4(0, h, L - lq + i, c, H, L, D)]));
                    }
                check(dp <= 1e-14 && dout <= 1e-14,
                      std::string("bottom_right_chunk_eq_full_rows[") + (m == Mask::Causal ? "causal" : "none") +
                          ",q=" + std::to_string(lq) + "," + name + "]",
                      "probs " + fmt(dp) + ", out " + fmt(dout));
            }
        }
    }
}

// ---- 10. degenerate parameters reduce to plain SDPA ---------------------------------------------
void test_reductions() {
    Problem p = make_problem(2, 4, 2, 5, 8, 8, Mask::Causal, 81);
    const auto H = static_cast<std::size_t>(p.heads), D = static_cast<std::size_t>(p.head_dim),
               Lk = static_cast<std::size_t>(p.k_len);
    const auto sd_p = probabilities(p, Sdpa{});
    const auto sd_o = attention(p, Sdpa{});
    check(std::fabs(effective_scale(p, Sdpa{}) - 1 / std::sqrt(8.0)) < 1e-16 && effective_scale(p, T5{}) == 1.0 &&
              std::fabs(effective_scale(p, Deberta{}) - 1 / std::sqrt(24.0)) < 1e-16,
          "default_scales (1/sqrt(D), T5 1, DeBERTa 1/sqrt(3D))");
    check_close(probabilities(p, Alibi{std::vector<double>(H, 0.0), false}), sd_p, 1e-15, "alibi_zero_slopes_eq_sdpa");
    Problem ps = p;
    ps.scale = 1 / std::sqrt(8.0);
    check_close(probabilities(ps, T5{std::vector<double>(32 * H, 0.0), 32, 128, true}), sd_p, 1e-15,
                "t5_zero_table_with_sdpa_scale_eq_sdpa");
    check(max_abs_diff(probabilities(p, T5{std::vector<double>(32 * H, 0.0), 32, 128, true}), sd_p) > 1e-4,
          "t5_default_is_unscaled");
    check_close(probabilities(p, Shaw{2, std::vector<double>(5 * D, 0.0), {}}), sd_p, 1e-15,
                "shaw_zero_tables_eq_sdpa");
    check_close(probabilities(p, TransformerXL{std::vector<double>(H * Lk * D, 0.0), std::vector<double>(H * D, 0.0),
                                               std::vector<double>(H * D, 0.0)}),
                sd_p, 1e-15, "txl_zero_r_u_v_eq_sdpa");
    check_close(
        probabilities(ps, Deberta{std::vector<double>(H * 6 * D, 0.0), std::vector<double>(H * 6 * D, 0.0), 3, 0, 0}),
        sd_p, 1e-15, "deberta_zero_pos_with_sdpa_scale_eq_sdpa");
    check_close(attention(p, Rope{Pairing::Half, 0, std::vector<double>(4, 0.0), {}, {}, 1}), sd_o, 1e-15,
                "rope_zero_freq_eq_sdpa");
    // Shaw: zero key table and a constant value table c: out = sdpa_out + c (rows sum to 1).
    std::vector<double> rv(5 * D);
    for (std::size_t i = 0; i < rv.size(); ++i)
        rv[i] = 0.25 + static_cast<double>(i % D);
    std::vector<double> expect = sd_o;
    for (std::size_t i = 0; i < expect.size(); ++i)
        expect[i] += rv[i % D];
    check_close(attention(p, Shaw{2, std::vector<double>(5 * D, 0.0), rv}), expect, 1e-13,
                "shaw_constant_value_table_shifts_output");
    // TXL: u only adds u.k_j, i.e. a per-key bias: equals adding u to q in the content term.
    std::mt19937 rng(82);
    TransformerXL txl{std::vector<double>(H * Lk * D, 0.0), random_vec(rng, H * D), std::vector<double>(H * D, 0.0)};
    Problem pu = p;
    for (int b = 0; b < p.batch; ++b)
        for (int h = 0; h < p.heads; ++h)
            for (int i = 0; i < p.q_len; ++i)
                for (int c = 0; c < p.head_dim; ++c)
                    pu.q[idx4(b, h, i, c, p.heads, p.q_len, p.head_dim)] +=
                        txl.u[static_cast<std::size_t>(h) * D + static_cast<std::size_t>(c)];
    check_close(probabilities(p, txl), probabilities(pu, Sdpa{}), 1e-14, "txl_u_term_is_content_bias");
    // TXL positional term: a one-hot row of r picks out exactly one distance.
    {
        Problem one = make_problem(1, 1, 1, 1, 4, 2, Mask::Causal, 83);
        one.q = {1.0, 0.0};
        one.k.assign(8, 0.0);
        TransformerXL t{std::vector<double>(8, 0.0), {0.0, 0.0}, {0.0, 0.0}};
        // distance 2 (key j=1 for the query at p=3) lives in row k_len-1-2 = 1
        t.r[1 * 2 + 0] = 5.0;
        const auto pr = probabilities(one, t);
        const double e = std::exp(5.0 / std::sqrt(2.0));
        check(std::fabs(pr[1] - e / (3 + e)) < 1e-15, "txl_row_t_encodes_distance_klen_minus_1_minus_t");
    }
    // DeBERTa: one-hot position tables check idx = clamp(p_i - j + span, 0, 2span-1), same for p2c.
    {
        Problem one = make_problem(1, 1, 1, 6, 6, 2, Mask::None, 84);
        for (int i = 0; i < 6; ++i) {
            one.q[static_cast<std::size_t>(2 * i)] = 1.0;
            one.q[static_cast<std::size_t>(2 * i + 1)] = 0.0;
        }
        one.k.assign(12, 0.0);
        const int span = 2;
        Deberta d{std::vector<double>(4 * 2, 0.0), std::vector<double>(4 * 2, 0.0), span, 0, 0};
        d.pos_key[1 * 2 + 0] = 4.0;  // idx 1 = rel -1 (query minus key): row 0 (p=0) -> key 1 only
        const auto pr = probabilities(one, d);
        const double e = std::exp(4.0 / std::sqrt(6.0));
        check(std::fabs(pr[0 * 6 + 1] - e / (5 + e)) < 1e-15 && std::fabs(pr[5 * 6 + 0] - 1.0 / 6) < 1e-15,
              "deberta_c2p_index_query_minus_key");
        Deberta d2{std::vector<double>(8, 0.0), std::vector<double>(8, 0.0), span, 0, 0};
        one.k[0 * 2 + 1] = 1.0;  // key 0: row 5 has rel = 5 -> clamped idx 3
        one.k[4 * 2 + 1] = 1.0;  // key 4: row 5 has rel = 1 -> idx 3
        one.k[5 * 2 + 1] = 1.0;  // key 5: row 5 has rel = 0 -> idx 2
        d2.pos_query[3 * 2 + 1] = 3.0;
        const auto pr2 = probabilities(one, d2);
        const double e3 = std::exp(3.0 / std::sqrt(6.0));
        check(std::fabs(pr2[5 * 6 + 0] - e3 / (4 + 2 * e3)) < 1e-15 &&
                  std::fabs(pr2[5 * 6 + 4] - pr2[5 * 6 + 0]) < 1e-15 &&
                  std::fabs(pr2[5 * 6 + 5] - 1 / (4 + 2 * e3)) < 1e-15,
              "deberta_p2c_same_index_and_clamp");
    }
    // T5 bias sign: bucket of j - p_i. One-hot table on bucket 17 (= +1 bidirectional) favours j = p+1.
    {
        Problem one = make_problem(1, 1, 1, 3, 3, 2, Mask::None, 85);
        one.q.assign(6, 0.0);
        std::vector<double> table(32, 0.0);
        table[17] = 2.0;
        const auto pr = probabilities(one, T5{table, 32, 128, true});
        const double e = std::exp(2.0);
        check(std::fabs(pr[0 * 3 + 1] - e / (2 + e)) < 1e-15 && std::fabs(pr[2 * 3 + 0] - 1.0 / 3) < 1e-15,
              "t5_bias_uses_key_minus_query");
    }
    // Shaw index sign: clip(j - p_i, -K, K) + K. One-hot rel_keys row 3 (= +1, key after query).
    {
        Problem one = make_problem(1, 1, 1, 3, 3, 2, Mask::None, 86);
        one.q = {1.0, 0.0, 1.0, 0.0, 1.0, 0.0};
        one.k.assign(6, 0.0);
        std::vector<double> rk(5 * 2, 0.0);
        rk[3 * 2 + 0] = 2.0;
        std::vector<double> rvals(5 * 2, 0.0);
        rvals[0 * 2 + 1] = 1.0;  // idx 0 = rel <= -2 (clipped): only row 2, key 0
        one.v.assign(6, 0.0);
        const auto pr = probabilities(one, Shaw{2, rk, rvals});
        const auto out = attention(one, Shaw{2, rk, rvals});
        const double e = std::exp(2.0 / std::sqrt(2.0));
        check(std::fabs(pr[0 * 3 + 1] - e / (2 + e)) < 1e-15 && std::fabs(pr[2 * 3 + 0] - 1.0 / 3) < 1e-15 &&
                  std::fabs(out[2 * 2 + 1] - 1.0 / 3) < 1e-15 && out[0 * 2 + 1] == 0.0,
              "shaw_index_uses_key_minus_query");
    }
    // Sliding window >= k_len equals causal; window 1 attends only to the diagonal.
    Problem w = p;
    w.mask = Mask::SlidingWindow;
    w.window = p.k_len;
    check_close(probabilities(w, Sdpa{}), sd_p, 0, "window_ge_klen_eq_causal");
    w.window = 1;
    const auto pw = probabilities(w, Sdpa{});
    bool diag = true;
    for (int b = 0; b < p.batch; ++b)
        for (int h = 0; h < p.heads; ++h)
            for (int i = 0; i < p.q_len; ++i)
                diag = diag && pw[idx4(b, h, i, p.k_len - p.q_len + i, p.heads, p.q_len, p.k_len)] == 1.0;
    check(diag, "window1_attends_only_own_position");
}

// ---- 11. RoPE frequency variants ---------------------------------------------------------------
void test_inv_freq() {
    const auto d = rope_inv_freq(16, 10000);
    check(d.size() == 8 && d[0] == 1.0 && std::fabs(d[4] - 0.01) < 1e-17, "rope_inv_freq(16,1e4) spot values");
    const auto lin = rope_inv_freq_linear(16, 10000, 4);
    bool ok = true;
    for (std::size_t c = 0; c < 8; ++c)
        ok = ok && std::fabs(lin[c] - d[c] / 4) < 1e-18;
    check(ok, "rope_inv_freq_linear == default / factor");
    check(rope_inv_freq_dynamic_ntk(16, 10000, 2, 16, 16) == d && rope_inv_freq_dynamic_ntk(16, 10000, 2, 16, 5) == d,
          "dynamic_ntk: unchanged while seq_len <= max_position_embeddings");
    const double base2 = 10000 * std::pow(2.0 * 33 / 16 - 1, 16.0 / 14);
    const auto ntk = rope_inv_freq_dynamic_ntk(16, 10000, 2, 16, 33);
    check(std::fabs(ntk[3] - std::pow(base2, -6.0 / 16)) < 1e-15 && ntk[0] == 1.0,
          "dynamic_ntk(seq 33, mpe 16, factor 2): base' = 1e4*((2*33/16)-1)^(16/14)");
    // Llama 3 (factor 8, low 1, high 4, original 8192): wavelength < 2048 kept, > 8192 divided by 8,
    // smooth in between.
    const auto l3 = rope_inv_freq_llama3(64, 500000, 8, 1, 4, 8192);
    const auto l3d = rope_inv_freq(64, 500000);
    bool kept = true, divided = true, between = true;
    for (std::size_t c = 0; c < 32; ++c) {
        const double wl = 2 * 3.14159265358979323846 / l3d[c];
        if (wl < 2048)
            kept = kept && l3[c] == l3d[c];
        else if (wl > 8192)
            divided = divided && std::fabs(l3[c] - l3d[c] / 8) < 1e-18;
        else
            between = between && l3[c] <= l3d[c] && l3[c] >= l3d[c] / 8;
    }
    check(kept && divided && between && l3[0] == 1.0, "llama3 inv_freq piecewise by wavelength");
    int medium_seen = 0;
    bool smooth_ok = true;
    for (std::size_t c = 0; c < 32; ++c) {
        const double wl = 2 * 3.14159265358979323846 / l3d[c];
        if (wl >= 2048 && wl <= 8192) {
            ++medium_seen;
            const double sm = (8192 / wl - 1) / (4 - 1);
            smooth_ok = smooth_ok && std::fabs(l3[c] - ((1 - sm) * l3d[c] / 8 + sm * l3d[c])) < 1e-18;
        }
    }
    check(medium_seen > 0 && smooth_ok, "llama3 medium band: (1-s) f/8 + s f, s = (8192/wavelen - 1)/(4 - 1)");
    double af = 0;
    const auto y = rope_inv_freq_yarn(64, 10000, 4, 2048, 32, 1, &af);
    const auto yd = rope_inv_freq(64, 10000);
    check(std::fabs(af - (0.1 * std::log(4.0) + 1)) < 1e-15 && y[0] == yd[0] && std::fabs(y[31] - yd[31] / 4) < 1e-18,
          "yarn: attention factor 0.1 ln(f)+1, high freq kept, low freq interpolated");
    check(rope_inv_freq_yarn(64, 10000, 4, 2048, 0, 0, nullptr) == y, "yarn: beta 0 -> defaults 32 / 1");
}

// ---- 12. sinusoid tables -----------------------------------------------------------------------
void test_sinusoids() {
    const auto pe = sinusoid_table(SinusoidConvention::PaperInterleaved, 16, 8);
    auto at = [](const std::vector<double> &t, int cols, int p, int c) {
        return t[static_cast<std::size_t>(p * cols + c)];
    };
    // w_i = 10000^(-2i/8) = 1, 0.1, 0.01, 0.001
    const double tol = 1e-15;
    bool ok = pe.size() == 128;
    for (int c = 0; ok && c < 8; ++c)
        ok = at(pe, 8, 0, c) == (c % 2 ? 1.0 : 0.0);
    ok = ok && std::fabs(at(pe, 8, 1, 0) - std::sin(1.0)) < tol && std::fabs(at(pe, 8, 1, 1) - std::cos(1.0)) < tol &&
         std::fabs(at(pe, 8, 3, 2) - std::sin(0.3)) < tol && std::fabs(at(pe, 8, 5, 3) - std::cos(0.5)) < tol &&
         std::fabs(at(pe, 8, 7, 4) - std::sin(0.07)) < tol && std::fabs(at(pe, 8, 15, 7) - std::cos(0.015)) < tol &&
         std::fabs(at(pe, 8, 15, 6) - std::sin(0.015)) < tol;
    check(ok, "sinusoid PaperInterleaved (16,8) spot values");
    bool threw = false;
    try {
        (void)sinusoid_table(SinusoidConvention::PaperInterleaved, 7, 5);
    } catch (const std::invalid_argument &) {
        threw = true;
    }
    check(threw, "sinusoid PaperInterleaved odd d throws");
    // tensor2tensor (16,8): n = 4, r_i = 1e4^(-i/3) = 1, ~0.0464, ~0.00215, 1e-4; [sin | cos]
    const auto t2t = sinusoid_table(SinusoidConvention::Tensor2TensorConcat, 16, 8);
    check(std::fabs(at(t2t, 8, 2, 0) - std::sin(2.0)) < tol && std::fabs(at(t2t, 8, 2, 4) - std::cos(2.0)) < tol &&
              std::fabs(at(t2t, 8, 10, 3) - std::sin(10 * 1e-4)) < tol &&
              std::fabs(at(t2t, 8, 10, 1) - std::sin(10 * std::pow(1e4, -1.0 / 3))) < tol,
          "sinusoid Tensor2TensorConcat (16,8) spot values (denominator n-1)");
    const auto t2o = sinusoid_table(SinusoidConvention::Tensor2TensorConcat, 7, 5);
    ok = sinusoid_columns(SinusoidConvention::Tensor2TensorConcat, 5) == 5 && t2o.size() == 35;
    for (int p = 0; ok && p < 7; ++p)
        ok = at(t2o, 5, p, 4) == 0.0;
    ok = ok && std::fabs(at(t2o, 5, 3, 1) - std::sin(3 * 1e-4)) < tol &&
         std::fabs(at(t2o, 5, 3, 2) - std::cos(3.0)) < tol;
    check(ok, "sinusoid Tensor2TensorConcat odd d: zero last column");
    const auto txl = sinusoid_table(SinusoidConvention::TransformerXLConcat, 7, 5);
    const double f1 = 1 / std::pow(10000.0, 2.0 / 5), f2 = 1 / std::pow(10000.0, 4.0 / 5);
    check(sinusoid_columns(SinusoidConvention::TransformerXLConcat, 5) == 6 && txl.size() == 42 &&
              std::fabs(at(txl, 6, 4, 0) - std::sin(4.0)) < tol &&
              std::fabs(at(txl, 6, 4, 1) - std::sin(4 * f1)) < tol &&
              std::fabs(at(txl, 6, 4, 2) - std::sin(4 * f2)) < tol &&
              std::fabs(at(txl, 6, 4, 5) - std::cos(4 * f2)) < tol,
          "sinusoid TransformerXLConcat odd d: d+1 columns [sin | cos]");
    const auto txl8 = sinusoid_table(SinusoidConvention::TransformerXLConcat, 16, 8);
    check(std::fabs(at(txl8, 8, 3, 1) - std::sin(0.3)) < tol && std::fabs(at(txl8, 8, 3, 5) - std::cos(0.3)) < tol,
          "sinusoid TransformerXLConcat (16,8) = paper frequencies, concatenated");
}

// ---- 13. argument validation ---------------------------------------------------------------------
void test_validation() {
    auto throws = [](const std::function<void()> &f) {
        try {
            f();
        } catch (const std::invalid_argument &) {
            return true;
        }
        return false;
    };
    Problem p = make_problem(1, 3, 2, 2, 2, 4, Mask::None, 91);
    check(throws([&] { (void)attention(p, Sdpa{}); }), "throws: heads not a multiple of kv_heads");
    Problem q = make_problem(1, 2, 2, 2, 2, 4, Mask::None, 92);
    q.v.pop_back();
    check(throws([&] { (void)attention(q, Sdpa{}); }), "throws: wrong v size");
    Problem r = make_problem(1, 2, 2, 2, 2, 4, Mask::None, 93);
    check(throws([&] { (void)attention(r, Alibi{{1.0}, false}); }), "throws: wrong slope count");
    check(throws([&] { (void)attention(r, Rope{Pairing::Half, 3, {}, {}, {}, 1}); }), "throws: odd rot_dim");
}

}  // namespace

int main() {
    test_softmax_rows();
    test_out_is_probs_times_v();
    test_gqa();
    test_alibi_forms();
    test_alibi_slopes();
    test_t5_buckets();
    test_deberta_buckets();
    test_rope_pairing();
    test_shift_invariance();
    test_chunk_consistency();
    test_reductions();
    test_inv_freq();
    test_sinusoids();
    test_validation();
    std::printf("%d passed, %d failed\n", g_passed, g_failed);
    return g_failed == 0 ? 0 : 1;
}
