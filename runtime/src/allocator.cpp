// Kernel temporaries (Halide's halide_malloc/halide_free) from a cache of freed blocks. glibc hands
// memory freed at the end of a call back to the OS (heap trim, munmap), so the next call pays page
// faults and TLB shootdowns for the same temporaries again: (1,8,512,512,64) prefill took 7.3 ms per
// call in a fresh process instead of 3.5 ms. Blocks are 128-byte aligned (wider than any vector the
// kernels use) and cached by size class, up to kCacheLimit bytes, behind a small per-thread cache:
// the parallel tasks of a kernel allocate and free at the same time, and one shared lock made them
// wait on each other (futex sleeps and wake-ups cost ~5% of a (4,8,256,256,64) prefill).
#include "internal.h"

#include <HalideRuntime.h>

#include <algorithm>
#include <cstdint>
#include <cstdlib>
#include <mutex>
#include <unordered_map>
#include <utility>
#include <vector>

namespace attngen::detail {
namespace {

constexpr size_t kAlignment = 128;               // the block's size class is stored in this header
constexpr size_t kCacheLimit = 256u << 20;       // bytes of freed blocks kept for reuse (shared)
constexpr size_t kThreadCacheLimit = 16u << 20;  // and per thread
constexpr size_t kThreadCacheBlocks = 64;

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

// Keeps a freed block in the shared cache, or returns it to the system beyond kCacheLimit.
void to_shared_cache(size_t cls, void *raw) {
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

// A thread's own blocks. Its lock is only contended by release_cached_blocks.
struct ThreadCache {
    std::mutex mutex;
    std::vector<std::pair<size_t, void *>> blocks;  // (size class, raw block)
    size_t bytes = 0;
    ThreadCache();
    ~ThreadCache();
};

struct ThreadCacheRegistry {
    std::mutex mutex;
    std::vector<ThreadCache *> caches;
};

ThreadCacheRegistry &registry() {
    static ThreadCacheRegistry *instance = new ThreadCacheRegistry;  // never destroyed, like cache()
    return *instance;
}

thread_local bool t_cache_alive = false;  // trivially destructible: readable while thread_locals die

ThreadCache::ThreadCache() {
    std::lock_guard<std::mutex> lock(registry().mutex);
    registry().caches.push_back(this);
    t_cache_alive = true;
}

// At thread exit the blocks go to the shared cache (or back to the system beyond its limit).
ThreadCache::~ThreadCache() {
    t_cache_alive = false;
    {
        std::lock_guard<std::mutex> lock(registry().mutex);
        auto &caches = registry().caches;
        caches.erase(std::remove(caches.begin(), caches.end(), this), caches.end());
    }
    std::lock_guard<std::mutex> own(mutex);
    for (auto &[cls, raw] : blocks)
        to_shared_cache(cls, raw);
    blocks.clear();
}

// This thread's cache, or null while the thread is exiting.
ThreadCache *thread_cache() {
    thread_local ThreadCache instance;
    return t_cache_alive ? &instance : nullptr;
}

void *cached_malloc(void *, size_t bytes) {
    const size_t cls = size_class(bytes);
    if (ThreadCache *t = thread_cache()) {
        std::lock_guard<std::mutex> lock(t->mutex);
        for (size_t n = t->blocks.size(); n-- > 0;) {
            if (t->blocks[n].first == cls) {
                void *raw = t->blocks[n].second;
                t->blocks[n] = t->blocks.back();
                t->blocks.pop_back();
                t->bytes -= cls;
                return static_cast<char *>(raw) + kAlignment;
            }
        }
    }
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
    if (ThreadCache *t = thread_cache()) {
        std::lock_guard<std::mutex> lock(t->mutex);
        if (t->blocks.size() < kThreadCacheBlocks && t->bytes + cls <= kThreadCacheLimit) {
            t->blocks.emplace_back(cls, raw);
            t->bytes += cls;
            return;
        }
    }
    to_shared_cache(cls, raw);
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
        std::lock_guard<std::mutex> lock(registry().mutex);
        for (ThreadCache *t : registry().caches) {
            std::lock_guard<std::mutex> own(t->mutex);
            for (auto &[cls, raw] : t->blocks) {
                blocks.push_back(raw);
                released += cls;
            }
            t->blocks.clear();
            t->bytes = 0;
        }
    }
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
