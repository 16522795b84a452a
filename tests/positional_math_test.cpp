// The vectorized sin_cos and exp2 of generators/positional_math.h (RoPE and xPos tables), JIT-compiled
// with the vector width of the CPU kernels, against double precision on the same float32 inputs.
#define CATCH_CONFIG_MAIN
#include <catch2/catch.hpp>

#include <cmath>
#include <limits>
#include <vector>

#include "positional_math.h"

namespace {

struct Errors {
    double sin = 0, cos = 0;
};

Errors max_errors(const std::vector<float> &angles) {
    using namespace Halide;
    Buffer<float> input(const_cast<float *>(angles.data()), int(angles.size()));
    Var n("n");
    Func sin_cos_f("sin_cos");
    const attngen::SinCos sc = attngen::sin_cos(input(n));
    sin_cos_f(n) = Tuple(sc.sin, sc.cos);
    sin_cos_f.vectorize(n, 16, TailStrategy::GuardWithIf);
    Realization r = sin_cos_f.realize({int(angles.size())});
    Buffer<float> s = r[0], c = r[1];
    Errors e;
    for (size_t i = 0; i < angles.size(); i++) {
        e.sin = std::max(e.sin, std::fabs(s(int(i)) - std::sin(double(angles[i]))));
        e.cos = std::max(e.cos, std::fabs(c(int(i)) - std::cos(double(angles[i]))));
    }
    return e;
}

// exp2_vector over `exponents`, realized as the CPU kernels vectorize it.
std::vector<float> exp2_of(const std::vector<float> &exponents) {
    using namespace Halide;
    Buffer<float> input(const_cast<float *>(exponents.data()), int(exponents.size()));
    Var n("n");
    Func power("power");
    power(n) = attngen::exp2_vector(input(n));
    power.vectorize(n, 16, TailStrategy::GuardWithIf);
    Buffer<float> out = power.realize({int(exponents.size())});
    return std::vector<float>(out.begin(), out.end());
}

std::vector<float> linspace(double from, double to, int count) {
    std::vector<float> v(count);
    for (int i = 0; i < count; i++)
        v[i] = float(from + (to - from) * i / (count - 1));
    return v;
}

}  // namespace

TEST_CASE("sin_cos: within 2e-7 of the exact values for |x| < 2e5 (libm float32: 6e-8)", "[positional_math]") {
    for (auto range : {std::pair{-10.0, 10.0}, std::pair{-2e5, 2e5}, std::pair{0.0, 4096.0}}) {
        INFO("angles " << range.first << " .. " << range.second);
        const Errors e = max_errors(linspace(range.first, range.second, 400001));
        CHECK(e.sin < 2e-7);
        CHECK(e.cos < 2e-7);
    }
    // RoPE's angles: integer positions times float32 inverse frequencies, up to 131072 positions.
    std::vector<float> angles;
    for (int f = 0; f < 64; f++) {
        const float inv_freq = float(std::pow(10000.0, -f / 64.0));
        for (int position = 0; position < 131072; position += 7)
            angles.push_back(float(position) * inv_freq);
    }
    const Errors e = max_errors(angles);
    CHECK(e.sin < 2e-7);
    CHECK(e.cos < 2e-7);
}

TEST_CASE("sin_cos: sane beyond the exact reduction range (|x| up to 1e6)", "[positional_math]") {
    const Errors e = max_errors(linspace(-1e6, 1e6, 400001));
    CHECK(e.sin < 5e-5);
    CHECK(e.cos < 5e-5);
}

TEST_CASE("exp2_vector: within 3e-7 relative of 2^x for x in [-125, 128), inf and 0 beyond", "[positional_math]") {
    std::vector<float> exponents = linspace(-125.0, 127.999, 400001);
    for (float x : {0.f, 0.5f, -0.5f, 1.f, -1.f, 127.f, 127.5f, 127.99f, -125.f, 1e-8f, -1e-8f})
        exponents.push_back(x);
    const std::vector<float> got = exp2_of(exponents);
    double worst = 0;
    for (size_t i = 0; i < exponents.size(); i++) {
        const double exact = std::exp2(double(exponents[i]));
        worst = std::max(worst, std::fabs(got[i] - exact) / exact);
    }
    CHECK(worst < 3e-7);
    CHECK(exp2_of({0.f, 1.f, 10.f, -3.f}) == std::vector<float>{1.f, 2.f, 1024.f, 0.125f});

    const float inf = std::numeric_limits<float>::infinity();
    const std::vector<float> beyond = exp2_of({128.f, 500.f, inf, -125.5f, -1000.f, -inf});
    CHECK(beyond == std::vector<float>{inf, inf, inf, 0.f, 0.f, 0.f});
}

TEST_CASE("exp2_vector: xPos decays zeta^((n + centre) / 512), 2k to 32k positions", "[positional_math]") {
    // torchscale's decay for D = 128, queries and keys (both signs), centred: the kernels' vector exp2 of
    // log2(zeta) * t against the exact power of the float32 zeta (powf's error for comparison).
    // log2(zeta)'s float32 rounding, times |t|, dominates at long sequences.
    for (auto [positions, bound] : {std::pair{2048, 3e-7}, std::pair{32768, 4e-6}}) {
        std::vector<float> exponents;
        std::vector<double> exact;
        double worst_powf = 0;
        for (int f = 0; f < 64; f += 3) {
            const float zeta = (2.f * float(f) + 0.4f * 128.f) / (1.4f * 128.f);
            const float log2_zeta = float(std::log(double(zeta))) * 1.44269504088896341f;
            for (int n = 0; n < positions; n += 3) {
                for (float sign : {1.f, -1.f}) {
                    const float t = sign * (float(n - positions / 2) / 512.f);
                    exponents.push_back(log2_zeta * t);
                    exact.push_back(std::pow(double(zeta), double(t)));
                    worst_powf = std::max(worst_powf, std::fabs(std::pow(zeta, t) - exact.back()) / exact.back());
                }
            }
        }
        const std::vector<float> got = exp2_of(exponents);
        double worst = 0;
        for (size_t i = 0; i < got.size(); i++)
            worst = std::max(worst, std::fabs(got[i] - exact[i]) / exact[i]);
        INFO(positions << " positions: worst relative error " << worst << ", powf's " << worst_powf);
        CHECK(worst < bound);
    }
}
