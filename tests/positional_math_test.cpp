// The vectorized sin_cos of generators/positional_math.h (RoPE and xPos tables), JIT-compiled with the
// vector width of the CPU kernels, against double-precision sin/cos of the same float32 angles.
#define CATCH_CONFIG_MAIN
#include <catch2/catch.hpp>

#include <cmath>
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
