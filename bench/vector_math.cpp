// Compiled with -ffast-math (bench/CMakeLists.txt). See vector_math.h.
#include "vector_math.h"

#include <cmath>
#include <cstdint>
#include <cstring>

#if defined(__x86_64__) && defined(__GNUC__) && !defined(__clang__) && defined(__linux__)
#define ATTNGEN_BENCH_CLONES __attribute__((target_clones("arch=skylake-avx512", "arch=haswell", "default")))
#else
#define ATTNGEN_BENCH_CLONES
#endif

namespace attngen_bench {

namespace {

// exp(x) for x <= 0: Cephes-style range reduction and a degree-6 polynomial (rel. error ~2e-7),
// written so the compiler vectorizes it. Below -78 it returns 0: a softmax row divides by its sum
// (up to Lk), and exp(-78) / 4096 is still a normal float, so no probability is ever denormal
// (denormal P would make the P V sgemm many times slower); such weights are < 1e-33 of the row's max.
inline float exp_approx(float x) {
    const bool underflow = x < -78.0f;
    x = underflow ? -78.0f : x;
    const float n = std::floor(x * 1.44269504088896341f + 0.5f);
    float r = x - n * 0.693359375f;
    r = r + n * 2.12194440e-4f;
    float y = 1.9875691500e-4f;
    y = y * r + 1.3981999507e-3f;
    y = y * r + 8.3334519073e-3f;
    y = y * r + 4.1665795894e-2f;
    y = y * r + 1.6666665459e-1f;
    y = y * r + 5.0000001201e-1f;
    y = y * r * r + r + 1.0f;
    const int32_t bits = (int32_t(n) + 127) << 23;
    float scale;
    std::memcpy(&scale, &bits, sizeof scale);
    return underflow ? 0.0f : y * scale;
}

}  // namespace

ATTNGEN_BENCH_CLONES
void softmax_row(float *row, int valid, int total) {
    float m = row[0];
    for (int j = 1; j < valid; j++)
        m = row[j] > m ? row[j] : m;
    float sum = 0;
    for (int j = 0; j < valid; j++) {
        const float e = exp_approx(row[j] - m);
        row[j] = e;
        sum += e;
    }
    const float inv = 1.0f / sum;
    for (int j = 0; j < valid; j++)
        row[j] *= inv;
    for (int j = valid; j < total; j++)
        row[j] = 0;
}

ATTNGEN_BENCH_CLONES
void add_inplace(float *dst, const float *src, std::size_t n) {
    for (std::size_t i = 0; i < n; i++)
        dst[i] += src[i];
}

ATTNGEN_BENCH_CLONES
float sum_range(const float *x, int n) {
    float sum = 0;
    for (int i = 0; i < n; i++)
        sum += x[i];
    return sum;
}

ATTNGEN_BENCH_CLONES
double sum_floats(const float *x, std::size_t n) {
    constexpr std::size_t streams = 4, block = 4096;
    const std::size_t part = n / streams;
    const float *x0 = x, *x1 = x + part, *x2 = x + 2 * part, *x3 = x + 3 * part;
    double total = 0;
    for (std::size_t start = 0; start < part; start += block) {
        const std::size_t end = start + block < part ? start + block : part;
        float s0 = 0, s1 = 0, s2 = 0, s3 = 0;
        for (std::size_t i = start; i < end; i++) {
            s0 += x0[i];
            s1 += x1[i];
            s2 += x2[i];
            s3 += x3[i];
        }
        total += double(s0) + s1 + s2 + s3;
    }
    for (std::size_t i = streams * part; i < n; i++)
        total += x[i];
    return total;
}

}  // namespace attngen_bench
