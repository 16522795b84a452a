// GPU schedule sweep, step 2 (see gen.sh): kernel-only timing of schedule variants; inputs stay on the
// device, and each output is compared with the first variant's (the default schedule, which the tests check).
#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <random>
#include <vector>

#include "HalideBuffer.h"
#include "HalideRuntimeCuda.h"

struct Variant {
    const char *name;
    bool decode;
    int (*fn)(halide_buffer_t *, halide_buffer_t *, halide_buffer_t *, halide_buffer_t *, float, int32_t, int32_t,
              halide_buffer_t *);
};
#include "variants.inc"

using Halide::Runtime::Buffer;

struct Shape {
    int B, H, Lq, Lk, D;
    int mask;
};

static void print_error(void *, const char *msg) {
    printf("halide error: %s\n", msg);
}

int main() {
    halide_set_error_handler(print_error);
    halide_reuse_device_allocations(nullptr, true);
    const Shape shapes[] = {{1, 8, 2048, 2048, 64, 0}, {1, 8, 2048, 2048, 64, 1}, {1, 16, 1024, 1024, 128, 0},
                            {4, 8, 256, 256, 64, 0},   {1, 8, 512, 512, 64, 0},   {1, 32, 1, 4096, 128, 0}};
    for (const Shape &s : shapes) {
        const bool decode = s.Lq == 1;
        Buffer<float> q(s.D, s.Lq, s.H, s.B), k(s.D, s.Lk, s.H, s.B), v(s.D, s.Lk, s.H, s.B);
        std::mt19937 rng(1);
        std::normal_distribution<float> nd(0.f, 1.f);
        for (Buffer<float> *b : {&q, &k, &v}) {
            b->for_each_value([&](float &x) { x = nd(rng); });
            b->set_host_dirty();  // else the pipeline finds no host data to copy to the device
        }
        Buffer<int32_t> kv_len(s.B);
        kv_len.fill(s.Lk);
        kv_len.set_host_dirty();
        std::vector<float> first;
        const double flops = 4.0 * s.B * s.H * double(s.Lq) * s.Lk * s.D * (s.mask && !decode ? 0.5 : 1.0);
        for (const Variant &var : kVariants) {
            if (var.decode != decode) continue;
            Buffer<float> out(s.D, s.Lq, s.H, s.B);
            const float scale = 1.f / std::sqrt(float(s.D));
            int err = var.fn(q, k, v, kv_len, scale, s.mask, 0, /*threads=*/1, out);
            if (err) {
                printf("%-20s %dx%dx%dx%dx%d m%d launch error %d\n", var.name, s.B, s.H, s.Lq, s.Lk, s.D, s.mask, err);
                continue;
            }
            out.copy_to_host();
            std::vector<float> got(out.begin(), out.end());
            double max_diff = 0, abs_sum = 0;
            for (float x : got)
                abs_sum += std::fabs(x);
            if (first.empty())
                first = got;
            else
                for (size_t n = 0; n < got.size(); n++)
                    max_diff = std::max(max_diff, double(std::fabs(got[n] - first[n])));
            std::vector<double> times;
            for (int rep = 0; rep < 7; rep++) {
                int calls = 0;
                auto t0 = std::chrono::steady_clock::now();
                double el = 0;
                do {
                    var.fn(q, k, v, kv_len, scale, s.mask, 0, /*threads=*/1, out);
                    calls++;
                    out.device_sync();
                    el = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
                } while (el < 0.05);
                times.push_back(el / calls);
            }
            std::sort(times.begin(), times.end());
            const double t = times[times.size() / 2];
            printf("%-20s %dx%dx%dx%dx%d m%d %9.3f ms %9.1f GFLOP/s  max|diff| %.2e  sum|out| %.4e\n", var.name, s.B,
                   s.H, s.Lq, s.Lk, s.D, s.mask, t * 1e3, flops / t / 1e9, max_diff, abs_sum);
            fflush(stdout);
        }
    }
}
