#include "instruction_probes.h"

#include <immintrin.h>

#include <algorithm>
#include <chrono>
#include <thread>
#include <vector>

namespace attngen_bench {

namespace {

constexpr long kIterations = 20'000'000;  // x 12 instructions per thread
constexpr int kAccumulators = 12;         // independent chains: more than latency x ports

volatile float g_sink = 0;

__attribute__((target("avx512f"))) void fma_loop() {
    __m512 acc[kAccumulators];
    for (__m512 &a : acc)
        a = _mm512_setzero_ps();
    __m512 x = _mm512_set1_ps(1.0001f), y = _mm512_set1_ps(0.9999f);
    for (long i = 0; i < kIterations; i++) {
#pragma GCC unroll 12
        for (int k = 0; k < kAccumulators; k++)
            acc[k] = _mm512_fmadd_ps(x, y, acc[k]);
        asm volatile("" : "+v"(x), "+v"(y));  // operands stay opaque: no hoisting
    }
    float total = 0;
    for (__m512 &a : acc)
        total += _mm512_reduce_add_ps(a);
    g_sink = total;
}

__attribute__((target("avx512f,avx512bf16"))) void dpbf16ps_loop() {
    __m512 acc[kAccumulators];
    for (__m512 &a : acc)
        a = _mm512_setzero_ps();
    __m512bh x = (__m512bh)_mm512_set1_epi32(0x3f803f80), y = (__m512bh)_mm512_set1_epi32(0x3f003f00);
    for (long i = 0; i < kIterations; i++) {
#pragma GCC unroll 12
        for (int k = 0; k < kAccumulators; k++)
            acc[k] = _mm512_dpbf16_ps(acc[k], x, y);
        asm volatile("" : "+v"(x), "+v"(y));
    }
    float total = 0;
    for (__m512 &a : acc)
        total += _mm512_reduce_add_ps(a);
    g_sink = total;
}

double best_rate(void (*loop)(), double flops_per_instruction, int threads, int repetitions) {
    double best = 0;
    for (int rep = 0; rep < repetitions; rep++) {
        const auto start = std::chrono::steady_clock::now();
        std::vector<std::thread> workers;
        for (int t = 0; t < threads; t++)
            workers.emplace_back(loop);
        for (std::thread &w : workers)
            w.join();
        const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
        const double flops = double(threads) * kIterations * kAccumulators * flops_per_instruction;
        best = std::max(best, flops / seconds * 1e-9);
    }
    return best;
}

}  // namespace

InstructionRates measure_instruction_rates(int threads, int repetitions) {
    InstructionRates rates;
    __builtin_cpu_init();
    if (__builtin_cpu_supports("avx512f")) rates.fma_gflops = best_rate(fma_loop, 32, threads, repetitions);
    if (__builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bf16"))
        rates.dpbf16ps_gflops = best_rate(dpbf16ps_loop, 64, threads, repetitions);
    return rates;
}

}  // namespace attngen_bench
