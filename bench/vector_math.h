// attngen-bench: the few element-wise loops of the unfused baselines and the bandwidth probe,
// compiled with -ffast-math and multi-versioned (AVX-512 / AVX2 / baseline, chosen at load time) so
// the baselines' softmax is vectorized like a real library's, not limited by scalar expf.
// Inputs must be finite (fast-math): masked keys are excluded by count, never passed as -inf.
#pragma once

#include <cstddef>

namespace attngen_bench {

// Softmax of row[0, valid) in place; row[valid, total) set to 0. valid >= 1.
void softmax_row(float *row, int valid, int total);
// dst[n] += src[n]
void add_inplace(float *dst, const float *src, std::size_t n);
// Sum of x[0, n) in float (Shaw's value-term aggregation).
float sum_range(const float *x, int n);
// Sum of x[0, n) (for the read-bandwidth probe), read as 4 streams in lockstep (its quarters): on an
// Intel Xeon (family 6, model 207), 2 threads read 21.0 GB/s as one stream each, 27.7 as 2, 31.0 as 4
// and 31.6 as 8; attngen's decode reads K and V side by side.
double sum_floats(const float *x, std::size_t n);

}  // namespace attngen_bench
