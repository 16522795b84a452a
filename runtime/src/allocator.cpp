// Kernel temporaries (Halide's halide_malloc/halide_free) from a cache of freed blocks. glibc hands
// memory freed at the end of a call back to the OS (heap trim, munmap), so the next call pays page
// faults and TLB shootdowns for the same temporaries again: (1,8,512,512,64) prefill took 7.3 ms per
// call in a fresh process instead of 3.5 ms. Blocks are 128-byte aligned (wider than any vector the
// kernels use) and cached by size class, up to kCacheLimit bytes.
#include "internal.h"

#include <HalideRuntime.h>

#include <cstdint>
#include <cstdlib>
#include <mutex>
#include <unordered_map>
#include <vector>

namespace attngen::detail {
namespace {

constexpr size_t kAlignment = 128;          // the block's size class is stored in this header
constexpr size_t kCacheLimit = 256u << 20;  // bytes of freed blocks kept for reuse

// Powers of two up to 64 KiB, then eight classes per octave (at most 12.5 % rounding).
size_t size_class(size_t bytes) {
    size_t power = 256;
    while (power < bytes)
        power <<= 1;
    if (power <= 65536) return power;
    const size_t step = power / 16;  // power / 2 < bytes <= power
    return (bytes + step - 1) / step * step;
}

struct BlockCache {
    std::mutex mutex;
    std::unordered_map<size_t, std::vector<void *>> free_blocks;  // size class -> raw blocks
    size_t cached_bytes = 0;
};

BlockCache &cache() {
    static BlockCache *instance = new BlockCache;  // never destroyed: kernels may free during exit
    return *instance;
}

void *cached_malloc(void *, size_t bytes) {
    const size_t cls = size_class(bytes);
    BlockCache &c = cache();
    {
        std::lock_guard<std::mutex> lock(c.mutex);
        auto found = c.free_blocks.find(cls);
        if (found != c.free_blocks.end() && !found->second.empty()) {
            void *raw = found->second.back();
            found->second.pop_back();
            c.cached_bytes -= cls;
            return static_cast<char *>(raw) + kAlignment;
        }
    }
    void *raw = std::aligned_alloc(kAlignment, cls + kAlignment);
    if (!raw) return nullptr;
    *static_cast<size_t *>(raw) = cls;
    return static_cast<char *>(raw) + kAlignment;
}

void cached_free(void *, void *ptr) {
    if (!ptr) return;
    void *raw = static_cast<char *>(ptr) - kAlignment;
    const size_t cls = *static_cast<size_t *>(raw);
    BlockCache &c = cache();
    {
        std::lock_guard<std::mutex> lock(c.mutex);
        if (c.cached_bytes + cls <= kCacheLimit) {
            c.free_blocks[cls].push_back(raw);
            c.cached_bytes += cls;
            return;
        }
    }
    std::free(raw);
}

}  // namespace

void install_block_cache() {
    halide_set_custom_malloc(cached_malloc);
    halide_set_custom_free(cached_free);
}

size_t release_cached_blocks() {
    BlockCache &c = cache();
    std::vector<void *> blocks;
    size_t released = 0;
    {
        std::lock_guard<std::mutex> lock(c.mutex);
        for (auto &[cls, list] : c.free_blocks) {
            blocks.insert(blocks.end(), list.begin(), list.end());
            released += cls * list.size();
            list.clear();
        }
        c.cached_bytes = 0;
    }
    for (void *raw : blocks)
        std::free(raw);
    return released;
}

}  // namespace attngen::detail

extern "C" size_t attngen_release_cached_memory(void) {
    return attngen::detail::release_cached_blocks();
}
