# Build options. Kernel generation is part of the build: the default set is lean enough for CI;
# larger sets are opt-in.

# CPU targets of the multi-target kernel library, most capable first: the runtime dispatches to
# the first one the running CPU supports. No avx512_sapphirerapids by default: with LLVM 14 it
# implies AVX512-FP16, which other AVX-512 CPUs (AMD Zen 4) lack.
if (CMAKE_SYSTEM_PROCESSOR MATCHES "x86_64|AMD64")
    set(_attngen_default_cpu_targets
        "x86-64-linux-avx-avx2-avx512-avx512_skylake-f16c-fma-sse41"
        "x86-64-linux-avx-avx2-f16c-fma-sse41"
        "x86-64-linux-sse41")
else ()
    set(_attngen_default_cpu_targets "host")
endif ()
set(ATTNGEN_CPU_TARGETS "${_attngen_default_cpu_targets}" CACHE STRING
    "Halide targets of the CPU kernel library, most capable first (runtime dispatch picks the first the CPU supports)")

# Tuned schedules for the CPU kernels: the file of the first CPU target (attngen-tune writes it).
list(GET ATTNGEN_CPU_TARGETS 0 _attngen_first_target)
set(ATTNGEN_TUNED_FILE "${PROJECT_SOURCE_DIR}/schedules/tuned/${_attngen_first_target}.json" CACHE FILEPATH
    "Tuned CPU schedule parameters (schedules/tuned/<target>.json); missing entries use the hand schedule")
option(ATTNGEN_USE_TUNED "Generate CPU kernels with the tuned schedule parameters" ON)
# Entries tuned on this CPU vendor's cores come first (attngen-tune records the vendor per entry):
# by default the build machine's, as the kernels are generated for the machine they run on.
set(_attngen_build_cpu_vendor "")
if (EXISTS /proc/cpuinfo)
    file(STRINGS /proc/cpuinfo _attngen_vendor_lines REGEX "^vendor_id" LIMIT_COUNT 1)
    if (_attngen_vendor_lines MATCHES ":[ \t]*([A-Za-z]+)")
        set(_attngen_build_cpu_vendor "${CMAKE_MATCH_1}")
    endif ()
endif ()
set(ATTNGEN_TUNED_CPU_VENDOR "${_attngen_build_cpu_vendor}" CACHE STRING
    "CPU vendor whose tuned entries come first (GenuineIntel, AuthenticAMD; default: the build machine's)")

option(ATTNGEN_BF16 "Generate bfloat16 CPU kernels (bf16 q/k/v/out, fp32 math)" ON)
# bf16 decode on avx512_bf16 dot products (vdpbf16ps). Halide 14 emits them only for avx512_sapphirerapids
# targets, whose LLVM 14 CPU implies AVX512-FP16, which other AVX-512 CPUs with bf16 (AMD Zen 4, Zen 5)
# lack. So these kernels are generated as LLVM IR and compiled by LLVM 14's llc (the llvm-14 package,
# which libhalide14-0-dev pulls in) for x86-64-v4 with avx512bf16 and nothing more; the runtime runs them
# on AMD CPUs with avx512_bf16 (ATTNGEN_BF16_DOT=1 in the environment: any CPU with it; =0: none).
find_program(ATTNGEN_LLC NAMES llc-14 llc PATHS /usr/lib/llvm-14/bin NO_DEFAULT_PATH)
if (NOT ATTNGEN_LLC)
    find_program(ATTNGEN_LLC NAMES llc-14)
endif ()
if (ATTNGEN_LLC AND CMAKE_SYSTEM_PROCESSOR MATCHES "x86_64|AMD64")
    set(_attngen_bf16_dot_default ON)
else ()
    set(_attngen_bf16_dot_default OFF)
endif ()
option(ATTNGEN_BF16_DOT "Also generate bf16 decode kernels on avx512_bf16 dot products (needs llc-14)"
       ${_attngen_bf16_dot_default})
set(ATTNGEN_BF16_DOT_TARGET "x86-64-linux-avx-avx2-avx512-avx512_cannonlake-avx512_sapphirerapids-avx512_skylake-f16c-fma-sse41"
    CACHE STRING "Halide target of the bf16 dot-product kernels (their IR is compiled without AVX512-FP16)")
set(ATTNGEN_BF16_DOT_LLC_FLAGS "-mcpu=x86-64-v4;-mattr=+avx512bf16" CACHE STRING
    "llc-14 CPU flags of the bf16 dot-product kernels: every instruction must exist on AVX-512 CPUs with avx512_bf16")
# bf16 prefill on dot products takes key chunks of this many times the tuned entry's keys (the tuner times fp32
# kernels): 2 keeps the entry's K/V bytes per chunk, and halves the chunks' per-chunk softmax and merge work,
# which the dot products' faster matmuls leave a larger share of. AMD Zen 5, the bench's 72 bf16 prefill rows,
# one process each, bf16 over fp32 paired: >= 1.6x on 44 rows with 2, 40 with 4, 17 with 1 (plain 1.42-1.70x
# -> 1.62-1.74x; 4x8x256x256x64 gained most, 1.47 -> 1.71x).
set(ATTNGEN_BF16_PREFILL_KEY_CHUNK_SCALE 2 CACHE STRING
    "Key chunk of bf16 dot-product prefill kernels, in multiples of the tuned (fp32) entry's")
# bf16 decode (every kernel but split-K's) takes key chunks of this many times the tuned entry's keys: 2 keeps
# the entry's K/V bytes per chunk (the decode schedule caps a chunk at 512 KiB of K and V; schemes with a value
# term, Shaw's, keep the entry's keys). AMD Zen 5, AOT, (1,32,1,4096,128) with K/V cycled through 512 MiB,
# alternating processes: plain 0.90x the time with 32 KV heads, 0.91x with 8; ALiBi 0.88x / 0.94x; Shaw with 8
# KV heads 1.25x (hence its exception).
set(ATTNGEN_BF16_DECODE_KEY_CHUNK_SCALE 2 CACHE STRING
    "Key chunk of bf16 decode kernels, in multiples of the tuned (fp32) entry's")
option(ATTNGEN_OPENCL "Generate OpenCL kernels (run on PoCL in the tests)" ON)
# CUDA kernels by default only where this machine has an NVIDIA driver: the main job generates the
# library for the machine it runs on, and elsewhere (CI) they could only be compiled, at an eighth of
# the default set's generation time. Building for a GPU machine elsewhere: -DATTNGEN_CUDA=ON.
if (EXISTS "/proc/driver/nvidia/version")
    set(_attngen_cuda_default ON)
else ()
    set(_attngen_cuda_default OFF)
endif ()
option(ATTNGEN_CUDA "Generate CUDA kernels (default: ON where an NVIDIA driver is loaded)" ${_attngen_cuda_default})
set(ATTNGEN_CUDA_CAPABILITY "cuda_capability_86" CACHE STRING "Halide CUDA capability feature (86 is Halide 14's highest)")
option(ATTNGEN_EMIT_STMT "Also write each kernel's Halide statement (.stmt) and assembly next to it" OFF)
option(ATTNGEN_BUILD_TESTS "Build the tests" ON)
option(ATTNGEN_BUILD_BENCH "Build the benchmarks (needs Google Benchmark, OpenBLAS, oneDNN)" ON)
set(ATTNGEN_EXTRA_SCHEME_SOURCES "examples/custom_scheme/kerple.cpp" CACHE STRING
    "User-defined scheme files (paths relative to the source tree or absolute), built like generators/schemes/*.cpp")
set(ATTNGEN_FAST_HEAD_DIMS "64,128" CACHE STRING "Head dims with a compile-time fast path in every attention kernel")
# The x86 fallback target (no AVX2) is there for correctness on old CPUs: by default it carries the
# generic head_dim path only, which saves about a quarter of the default set's generation time.
set(ATTNGEN_FALLBACK_FAST_HEAD_DIMS "0" CACHE STRING
    "Head dims with a fast path on x86 targets without AVX2 (0: none, the generic path only)")
