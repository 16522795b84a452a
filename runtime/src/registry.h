// The kernel table, generated at build time (cmake/AttngenKernels.cmake) from the kernels the
// build declares: the runtime finds kernels here and calls them through Halide's argv entry.
#pragma once

#include <HalideRuntime.h>

namespace attngen::detail {

struct KernelEntry {
    const char *name;         // e.g. attngen_rope_half_prefill_cpu
    const char *kind;         // attention | op
    const char *scheme;       // attention: scheme name
    const char *options;      // attention: scheme options, e.g. pairing=half
    const char *shape;        // attention: prefill | decode
    const char *device;       // cpu | opencl | cuda
    const char *op;           // op: rope_half, xpos, sinusoid_table, ...
    const char *dtype;        // element type of q, k, v, out: f32 | bf16
    int head_dim;             // attention: the one head_dim it computes (a fast path), 0 for any
    const char *cpu_targets;  // CPU kernels: their Halide targets, comma-separated, dispatch order
    int (*argv)(void **args);
    const halide_filter_metadata_t *(*metadata)();
};

extern const KernelEntry kKernelTable[];
extern const int kKernelCount;

}  // namespace attngen::detail
