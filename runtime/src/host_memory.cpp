// attngen_alloc / attngen_free: memory for tensors. Every block starts on a cache line (a 64-byte vector
// load never spans two lines); blocks of 2 MiB or more start on a 2 MiB boundary and are advised as
// transparent huge pages. Decode streams K and V once per call: with 4 KiB pages each page costs a
// TLB miss (a two-level walk in a VM). AOT runtime calls, (1,32,1,4096,128), K/V cycled through 512 MiB,
// AMD Zen 5 VM with THP in "madvise" mode, 3 alternating processes: 8 KV heads 0.89-0.98x the time
// (bf16 K/V 0.89-0.93x), 32 KV heads 0.93-1.02x.
#include "attngen/attngen.h"

#include <cstdint>
#include <cstdlib>

#if defined(__linux__)
#include <sys/mman.h>
#endif

namespace {

constexpr size_t kCacheLine = 64;
constexpr size_t kHugePage = size_t(2) << 20;

// bytes rounded up to a multiple of `alignment` (a power of two); 0 when that overflows.
size_t round_up(size_t bytes, size_t alignment) {
    if (bytes > SIZE_MAX - (alignment - 1)) return 0;
    return (bytes + alignment - 1) & ~(alignment - 1);
}

}  // namespace

extern "C" void *attngen_alloc(size_t bytes) {
    if (bytes == 0) return nullptr;
    const size_t alignment = bytes >= kHugePage ? kHugePage : kCacheLine;
    const size_t size = round_up(bytes, alignment);  // aligned_alloc wants a multiple of the alignment
    if (size == 0) return nullptr;
    void *block = std::aligned_alloc(alignment, size);
#if defined(__linux__) && defined(MADV_HUGEPAGE)
    // Advice only: where THP is off (or "always") this changes nothing, and a refusal is not an error.
    if (block && alignment == kHugePage) (void)madvise(block, size, MADV_HUGEPAGE);
#endif
    return block;
}

extern "C" void attngen_free(void *block) {
    std::free(block);
}
