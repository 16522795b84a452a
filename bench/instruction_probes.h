// attngen-bench: peak rates of the two multiply-accumulate instructions a kernel could use, on this
// CPU, with register-resident operands: fp32 FMA (vfmadd231ps zmm) and bf16 pair dot products
// (vdpbf16ps zmm, avx512_bf16). They say what a bf16 kernel can gain here: where vdpbf16ps is not
// faster per flop than FMA (Intel cores issue it on one port), bf16 dot products cannot speed up
// the matrix products, and bf16 storage with fp32 FMA is the faster kernel.
#pragma once

namespace attngen_bench {

struct InstructionRates {
    double fma_gflops = 0;       // 0: not measured (no AVX-512F)
    double dpbf16ps_gflops = 0;  // 0: not measured (no AVX512_BF16)
};

// Each rate with `threads` threads, best of `repetitions` (GFLOP/s; a vdpbf16ps counts 64 flops,
// a 16-lane FMA 32).
InstructionRates measure_instruction_rates(int threads, int repetitions);

}  // namespace attngen_bench
