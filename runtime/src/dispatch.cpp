// Kernel lookup in the generated registry, device selection, and calls through Halide's argv
// entry points with arguments matched by name to each kernel's metadata.
#include "internal.h"

#include <dlfcn.h>
#if defined(__x86_64__) || defined(__i386__)
#include <cpuid.h>
#endif

#include <algorithm>
#include <cstdio>
#include <cstdlib>

#include <initializer_list>
#include <mutex>
#include <sstream>
#include <thread>
#include <unordered_map>

#include "cpu_targets.h"  // generated: ATTNGEN_CPU_TARGETS, comma-separated, dispatch order

namespace attngen::detail {

namespace {

// Halide reports kernel errors through this handler; the runtime turns them into messages.
std::mutex g_error_mutex;
std::string g_last_halide_error;

void capture_halide_error(void *, const char *message) {
    std::lock_guard<std::mutex> lock(g_error_mutex);
    g_last_halide_error = message ? message : "";
    while (!g_last_halide_error.empty() && g_last_halide_error.back() == '\n')
        g_last_halide_error.pop_back();
}

// Threads of Halide's pool as its runtime sizes it by default (HL_NUM_THREADS, else the CPU count):
// attention kernels take it as the `threads` input, by which CPU schedules pick their parallel loops.
int32_t thread_pool_size() {
    static const int32_t size = [] {
        for (const char *name : {"HL_NUM_THREADS", "HL_NUMTHREADS"}) {
            if (const char *value = std::getenv(name)) {
                const long parsed = std::strtol(value, nullptr, 10);
                if (parsed > 0) return int32_t(std::min(parsed, 256L));
            }
        }
        return int32_t(std::max(1u, std::thread::hardware_concurrency()));
    }();
    return size;
}

// CPU variants of the multi-target kernels, most capable first (ATTNGEN_CPU_TARGETS), as Halide
// feature masks. The multi-target wrapper asks halide_can_use_target_features about each variant on
// its first call and caches the answer; the runtime asks the same question to report the variant,
// and ATTNGEN_CPU_VARIANT=<substring of a target> caps the choice (tests run every variant here).
struct CpuVariant {
    std::string target;
    uint64_t features[2] = {0, 0};
};

std::vector<std::string> cpu_targets();

const std::vector<CpuVariant> &cpu_variants() {
    static const std::vector<CpuVariant> variants = [] {
        static const std::pair<const char *, halide_target_feature_t> kFeatures[] = {
            {"sse41", halide_target_feature_sse41},
            {"avx", halide_target_feature_avx},
            {"avx2", halide_target_feature_avx2},
            {"fma", halide_target_feature_fma},
            {"fma4", halide_target_feature_fma4},
            {"f16c", halide_target_feature_f16c},
            {"avx512", halide_target_feature_avx512},
            {"avx512_knl", halide_target_feature_avx512_knl},
            {"avx512_skylake", halide_target_feature_avx512_skylake},
            {"avx512_cannonlake", halide_target_feature_avx512_cannonlake},
            {"avx512_sapphirerapids", halide_target_feature_avx512_sapphirerapids},
        };
        std::vector<CpuVariant> list;
        for (const std::string &target : cpu_targets()) {
            CpuVariant variant;
            variant.target = target;
            std::stringstream in(target);
            std::string token;
            while (std::getline(in, token, '-')) {
                for (const auto &[name, feature] : kFeatures) {
                    if (token == name) variant.features[feature / 64] |= uint64_t(1) << (feature % 64);
                }
            }
            list.push_back(variant);
        }
        return list;
    }();
    return variants;
}

// Index of the most capable variant a cap allows (ATTNGEN_CPU_VARIANT), 0 without a cap.
int variant_cap() {
    static const int cap = [] {
        const char *wanted = std::getenv("ATTNGEN_CPU_VARIANT");
        if (!wanted || !*wanted) return 0;
        const std::vector<CpuVariant> &variants = cpu_variants();
        for (size_t n = 0; n < variants.size(); n++) {
            if (variants[n].target.find(wanted) != std::string::npos) return int(n);
        }
        return 0;
    }();
    return cap;
}

int capped_can_use_target_features(int count, const uint64_t *features) {
    // Compare CPU feature bits only: the wrapper's masks also carry e.g. no_runtime.
    const std::vector<CpuVariant> &variants = cpu_variants();
    uint64_t cpu_bits[2] = {0, 0};
    for (const CpuVariant &variant : variants) {
        cpu_bits[0] |= variant.features[0];
        cpu_bits[1] |= variant.features[1];
    }
    for (int n = 0; n < variant_cap() && n < int(variants.size()) && count >= 2; n++) {
        if ((features[0] & cpu_bits[0]) == variants[n].features[0] &&
            (features[1] & cpu_bits[1]) == variants[n].features[1]) {
            return 0;
        }
    }
    return halide_default_can_use_target_features(count, features);
}

void install_halide_hooks() {
    static std::once_flag once;
    std::call_once(once, [] {
        halide_set_error_handler(capture_halide_error);
        halide_set_custom_can_use_target_features(capped_can_use_target_features);
        install_block_cache();
    });
}

// Items of a comma-separated list, empty ones skipped.
std::vector<std::string> split_commas(const char *list) {
    std::vector<std::string> items;
    std::stringstream in(list);
    for (std::string item; std::getline(in, item, ',');) {
        if (!item.empty()) items.push_back(item);
    }
    return items;
}

std::vector<std::string> cpu_targets() {
    return split_commas(ATTNGEN_CPU_TARGETS);
}

bool cuda_device_present() {
    static int present = -1;
    static std::once_flag once;
    std::call_once(once, [] {
        present = 0;
        void *lib = dlopen("libcuda.so.1", RTLD_LAZY | RTLD_LOCAL);
        if (!lib) return;
        using InitFn = int (*)(unsigned);
        using CountFn = int (*)(int *);
        auto init = reinterpret_cast<InitFn>(dlsym(lib, "cuInit"));
        auto count = reinterpret_cast<CountFn>(dlsym(lib, "cuDeviceGetCount"));
        int devices = 0;
        if (init && count && init(0) == 0 && count(&devices) == 0 && devices > 0) present = 1;
    });
    return present == 1;
}

// OpenCL devices of a type (CL_DEVICE_TYPE_GPU = 4, CL_DEVICE_TYPE_ALL = 0xFFFFFFFF).
bool opencl_device_present(uint64_t device_type) {
    void *lib = dlopen("libOpenCL.so.1", RTLD_LAZY | RTLD_LOCAL);
    if (!lib) lib = dlopen("libOpenCL.so", RTLD_LAZY | RTLD_LOCAL);
    if (!lib) return false;
    using PlatformsFn = int (*)(unsigned, void **, unsigned *);
    using DevicesFn = int (*)(void *, uint64_t, unsigned, void **, unsigned *);
    auto platforms_fn = reinterpret_cast<PlatformsFn>(dlsym(lib, "clGetPlatformIDs"));
    auto devices_fn = reinterpret_cast<DevicesFn>(dlsym(lib, "clGetDeviceIDs"));
    if (!platforms_fn || !devices_fn) return false;
    void *platforms[16];
    unsigned platform_count = 0;
    if (platforms_fn(16, platforms, &platform_count) != 0) return false;
    for (unsigned p = 0; p < platform_count && p < 16; p++) {
        unsigned devices = 0;
        if (devices_fn(platforms[p], device_type, 0, nullptr, &devices) == 0 && devices > 0) return true;
    }
    return false;
}

bool opencl_gpu_present() {
    static int present = -1;
    static std::once_flag once;
    std::call_once(once, [] { present = opencl_device_present(4) ? 1 : 0; });
    return present == 1;
}

bool opencl_any_present() {
    static int present = -1;
    static std::once_flag once;
    std::call_once(once, [] { present = opencl_device_present(0xFFFFFFFFull) ? 1 : 0; });
    return present == 1;
}

// avx512_bf16 (CPUID leaf 7, sub-leaf 1, EAX bit 5), and whether the CPU is AMD's.
bool cpu_has_avx512_bf16() {
#if defined(__x86_64__) || defined(__i386__)
    unsigned eax = 0, ebx = 0, ecx = 0, edx = 0;
    if (__get_cpuid_max(0, nullptr) < 7) return false;
    __cpuid_count(7, 1, eax, ebx, ecx, edx);
    return (eax >> 5) & 1u;
#else
    return false;
#endif
}

bool cpu_is_amd() {
#if defined(__x86_64__) || defined(__i386__)
    unsigned eax = 0, ebx = 0, ecx = 0, edx = 0;
    if (!__get_cpuid(0, &eax, &ebx, &ecx, &edx)) return false;
    return ebx == 0x68747541u && edx == 0x69746e65u && ecx == 0x444d4163u;  // "AuthenticAMD"
#else
    return false;
#endif
}

// bf16 dot-product kernels run where the dispatcher runs the AVX-512 variant and the CPU has avx512_bf16,
// by default on AMD CPUs only: Zen 4 and Zen 5 run vdpbf16ps at about twice the fp32 FMA rate per flop
// (the benchmark's probe: 1.84-1.96x on Zen 5), the Intel Xeon of our 2-core machines at half of it.
// ATTNGEN_BF16_DOT=1 runs them on any CPU with avx512_bf16, =0 nowhere.
bool bf16_dot_kernels_usable() {
    static const bool usable = [] {
        const char *wanted = std::getenv("ATTNGEN_BF16_DOT");
        const std::string choice = wanted ? wanted : "";
        if (choice == "0") return false;
        if (dispatched_cpu_target().find("avx512_skylake") == std::string::npos || !cpu_has_avx512_bf16()) return false;
        return choice == "1" || cpu_is_amd();
    }();
    return usable;
}

}  // namespace

bool is_bf16_dot_kernel(const KernelEntry &kernel) {
    return std::string(kernel.device) == "cpu" &&
           std::string(kernel.cpu_targets).find("avx512_sapphirerapids") != std::string::npos;
}

namespace {

// find_attention_kernel's search: a scan of the whole kernel table.
const KernelEntry *scan_attention_kernels(const std::string &scheme, const std::string &options,
                                          const std::string &shape, const std::string &device, const std::string &dtype,
                                          int64_t head_dim) {
    const KernelEntry *generic = nullptr, *fixed = nullptr, *dot = nullptr;
    for (int n = 0; n < kKernelCount; n++) {
        const KernelEntry &k = kKernelTable[n];
        if (std::string(k.kind) != "attention" || scheme != k.scheme || options != k.options || shape != k.shape ||
            device != k.device || dtype != k.dtype) {
            continue;
        }
        if (k.head_dim == 0 && !generic) generic = &k;
        if (k.head_dim > 0 && k.head_dim == head_dim) {
            if (is_bf16_dot_kernel(k)) {
                if (bf16_dot_kernels_usable()) dot = &k;
            } else if (!fixed) {
                fixed = &k;
            }
        }
    }
    if (dot) return dot;
    // A fixed head_dim kernel lacks the CPU variants without its fast path (by default the x86
    // fallback without AVX2): its multi-target wrapper would run its last variant on such a CPU.
    if (fixed && device == "cpu") {
        const std::vector<std::string> targets = split_commas(fixed->cpu_targets);
        if (std::find(targets.begin(), targets.end(), dispatched_cpu_target()) == targets.end()) fixed = nullptr;
    }
    return fixed ? fixed : generic;
}

// Registry lookups memoized by request: the table is fixed, and so is the choice for a request (the CPU and the
// environment are read once). A scan compares names across the whole table, several times per call
// (resolve_device asks for each device, finding none for those not built): 60 % of a small attention call
// (14 of 24 us at (1,1,16,16,64)), a third of a one-row RoPE call. Misses are kept too; the memo is bounded, so
// requests for ever-new schemes or head dims cannot grow it without end.
class LookupMemo {
public:
    template <typename Scan>
    const KernelEntry *find(std::string key, Scan scan) {
        {
            std::lock_guard<std::mutex> lock(mutex_);
            const auto found = remembered_.find(key);
            if (found != remembered_.end()) return found->second;
        }
        const KernelEntry *kernel = scan();
        std::lock_guard<std::mutex> lock(mutex_);
        if (remembered_.size() >= kMaxRemembered) remembered_.clear();
        remembered_.emplace(std::move(key), kernel);
        return kernel;
    }

private:
    static constexpr size_t kMaxRemembered = 1024;
    std::mutex mutex_;
    std::unordered_map<std::string, const KernelEntry *> remembered_;
};

// Parts joined by NUL, which no name holds.
std::string lookup_key(std::initializer_list<std::string> parts) {
    std::string key;
    for (const std::string &part : parts) {
        key += part;
        key += '\0';
    }
    return key;
}

}  // namespace

const KernelEntry *find_attention_kernel(const std::string &scheme, const std::string &options,
                                         const std::string &shape, const std::string &device, const std::string &dtype,
                                         int64_t head_dim) {
    static LookupMemo memo;
    return memo.find(lookup_key({scheme, options, shape, device, dtype, std::to_string(head_dim)}),
                     [&] { return scan_attention_kernels(scheme, options, shape, device, dtype, head_dim); });
}

const KernelEntry *find_op_kernel(const std::string &op, const std::string &device) {
    static LookupMemo memo;
    return memo.find(lookup_key({op, device}), [&]() -> const KernelEntry * {
        for (int n = 0; n < kKernelCount; n++) {
            const KernelEntry &k = kKernelTable[n];
            if (std::string(k.kind) == "op" && op == k.op && device == k.device) return &k;
        }
        return nullptr;
    });
}

std::string resolve_device(attngen_device device, const std::string &scheme, const std::string &options,
                           const std::string &shape, const std::string &dtype) {
    auto built = [&](const char *name) {
        return find_attention_kernel(scheme, options, shape, name, dtype) != nullptr;
    };
    // An explicitly requested GPU device: kernels built for it, and its runtime finds a device.
    auto require_gpu = [&](const char *name, const char *label, const char *option, bool (*present)(),
                           const char *absent) {
        if (!built(name)) {
            fail(ATTNGEN_ERROR_UNSUPPORTED, std::string("device ") + name + " requested, but this build has no " +
                                                label + " kernels for " + dtype +
                                                (dtype == "f32" ? std::string(" (") + option + "=OFF)"
                                                                : std::string(" (bfloat16 kernels are CPU only)")));
        }
        if (!present()) {
            fail(ATTNGEN_ERROR_DEVICE_UNAVAILABLE, std::string("device ") + name + " requested, but " + absent);
        }
        return name;
    };
    switch (device) {
        case ATTNGEN_DEVICE_AUTO:
            if (built("cuda") && cuda_device_present()) return "cuda";
            if (built("opencl") && opencl_gpu_present()) return "opencl";
            return "cpu";
        case ATTNGEN_DEVICE_CPU:
            return "cpu";
        case ATTNGEN_DEVICE_CUDA:
            return require_gpu("cuda", "CUDA", "ATTNGEN_CUDA", cuda_device_present,
                               "no CUDA driver or device was found");
        case ATTNGEN_DEVICE_OPENCL:
            return require_gpu("opencl", "OpenCL", "ATTNGEN_OPENCL", opencl_any_present,
                               "no OpenCL platform or device was found");
    }
    invalid("desc.device is " + std::to_string(int(device)) + ", expected 0..3 (auto, cpu, opencl, cuda)");
}

std::string dispatched_cpu_target() {
    install_halide_hooks();
    // The CPU and the cap do not change while the process runs: asked once.
    static const std::string target = [] {
        const std::vector<CpuVariant> &variants = cpu_variants();
        if (variants.empty()) return std::string("host");
        // The wrapper runs the most capable variant the CPU (and the cap) allows; the last is the fallback.
        for (size_t n = 0; n + 1 < variants.size(); n++) {
            if (capped_can_use_target_features(2, variants[n].features)) return variants[n].target;
        }
        return variants.back().target;
    }();
    return target;
}

void call_kernel(const KernelEntry &kernel, const KernelArguments &args) {
    install_halide_hooks();
    const halide_filter_metadata_t *meta = kernel.metadata();
    std::vector<std::unique_ptr<HalideView>> views;
    std::vector<void *> argv(meta->num_arguments);
    std::vector<int32_t> ints(meta->num_arguments);
    std::vector<float> floats(meta->num_arguments);
    for (int n = 0; n < meta->num_arguments; n++) {
        const halide_filter_argument_t &arg = meta->arguments[n];
        const std::string name = arg.name;
        if (arg.kind == halide_argument_kind_input_scalar) {
            if (arg.type.code == halide_type_float && arg.type.bits == 32) {
                auto found = args.floats.find(name);
                if (found == args.floats.end())
                    invalid("kernel " + std::string(kernel.name) + " needs float input '" + name + "', not supplied");
                floats[n] = found->second;
                argv[n] = &floats[n];
            } else if (arg.type.code == halide_type_int && arg.type.bits == 32) {
                auto found = args.ints.find(name);
                if (found != args.ints.end()) {
                    ints[n] = found->second;
                } else if (name == "threads") {
                    ints[n] = thread_pool_size();
                } else {
                    invalid("kernel " + std::string(kernel.name) + " needs int input '" + name + "', not supplied");
                }
                argv[n] = &ints[n];
            } else {
                fail(ATTNGEN_ERROR_UNSUPPORTED,
                     "kernel " + std::string(kernel.name) + ": scalar '" + name + "' has an unsupported type");
            }
            continue;
        }
        const bool is_output = arg.kind == halide_argument_kind_output_buffer;
        auto found = args.tensors.find(is_output ? "out" : name);
        if (found == args.tensors.end() || !found->second) {
            invalid("kernel " + std::string(kernel.name) + " needs tensor '" + name + "', not supplied");
        }
        const attngen_tensor &t = *found->second;
        const attngen_dtype wanted = arg.type.code == halide_type_float    ? ATTNGEN_FLOAT32
                                     : arg.type.code == halide_type_bfloat ? ATTNGEN_BFLOAT16
                                                                           : ATTNGEN_INT32;
        if (t.rank != arg.dimensions || t.dtype != wanted) {
            invalid(std::string(is_output ? "out" : name) + ": expected rank " + std::to_string(arg.dimensions) + " " +
                    dtype_name(wanted) + " for kernel " + kernel.name + ", got rank " + std::to_string(t.rank) + " " +
                    dtype_name(t.dtype) + " shape " + shape_string(t));
        }
        views.push_back(std::make_unique<HalideView>(t, is_output, name));
        argv[n] = views.back()->buffer();
    }
    {
        std::lock_guard<std::mutex> lock(g_error_mutex);
        g_last_halide_error.clear();
    }
    const int result = kernel.argv(argv.data());
    if (result != 0) {
        std::string message;
        {
            std::lock_guard<std::mutex> lock(g_error_mutex);
            message = g_last_halide_error;
        }
        if (result == halide_error_code_out_of_memory)
            fail(ATTNGEN_ERROR_OUT_OF_MEMORY, "kernel " + std::string(kernel.name) + ": out of memory");
        const bool device_problem = std::string(kernel.device) != "cpu";
        fail(device_problem ? ATTNGEN_ERROR_DEVICE_UNAVAILABLE : ATTNGEN_ERROR_KERNEL_FAILED,
             "kernel " + std::string(kernel.name) + " failed (Halide error " + std::to_string(result) + ")" +
                 (message.empty() ? "" : ": " + message));
    }
    for (auto &view : views)
        view->finish();
}

}  // namespace attngen::detail

extern "C" const char *attngen_kernel_list(void) {
    static std::string list = [] {
        std::string text;
        for (int n = 0; n < attngen::detail::kKernelCount; n++) {
            const auto &k = attngen::detail::kKernelTable[n];
            text += std::string(k.name) + " " + k.kind + " " + (k.kind == std::string("op") ? k.op : k.scheme) +
                    (k.options[0] ? std::string(" ") + k.options : "") +
                    (k.shape[0] ? std::string(" ") + k.shape : "") + " " + k.device +
                    (k.head_dim > 0 ? " head_dim=" + std::to_string(k.head_dim) : "") + "\n";
        }
        return text;
    }();
    return list.c_str();
}

extern "C" int32_t attngen_device_available(attngen_device device) {
    using namespace attngen::detail;
    switch (device) {
        case ATTNGEN_DEVICE_AUTO:
        case ATTNGEN_DEVICE_CPU:
            return 1;
        case ATTNGEN_DEVICE_OPENCL:
            return opencl_any_present() ? 1 : 0;
        case ATTNGEN_DEVICE_CUDA:
            return cuda_device_present() ? 1 : 0;
    }
    return 0;
}
