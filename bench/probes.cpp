#include "probes.h"

#include "bench_problem.h"
#include "instruction_probes.h"
#include "thread_pool.h"
#include "vector_math.h"

#include <cblas.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <fstream>
#include <iterator>
#include <map>
#include <memory>
#include <string>
#include <vector>

namespace attngen_bench {

namespace {

ProbeResults g_results;

double seconds_since(std::chrono::steady_clock::time_point start) {
    return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}

struct Matrices {
    std::vector<float> a, b, c;
};

Matrices &matrices(int n) {
    static std::map<int, Matrices> cache;
    Matrices &m = cache[n];
    if (m.a.empty()) {
        const std::size_t size = std::size_t(n) * n;
        m.a.resize(size);
        m.b.resize(size);
        m.c.assign(size, 0.f);
        for (std::size_t i = 0; i < size; i++) {
            m.a[i] = float(int(i * 7919 % 2001) - 1000) * 1e-3f;
            m.b[i] = float(int(i * 104729 % 2001) - 1000) * 1e-3f;
        }
    }
    return m;
}

// The same memory as the rows' inputs (AlignedVector: huge pages for large blocks), so the probe and
// decode's K/V pay the same per-page costs.
Floats g_read_buffer;

volatile double g_sink = 0;  // keeps the sums alive

}  // namespace

double time_sgemm_once(int n) {
    openblas_set_num_threads(kProbeThreads);
    Matrices &m = matrices(n);
    const auto start = std::chrono::steady_clock::now();
    cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, n, n, n, 1.f, m.a.data(), n, m.b.data(), n, 0.f, m.c.data(),
                n);
    const double t = seconds_since(start);
    openblas_set_num_threads(1);
    return t;
}

double time_read_once(std::size_t bytes) {
    const std::size_t n = bytes / sizeof(float);
    ThreadPool &pool = baseline_pool();
    const int parts = kProbeThreads;
    if (g_read_buffer.size() != n) {
        g_read_buffer = Floats();
        g_read_buffer.reserve(n);
        g_read_buffer.resize(n);  // zero-initialized by this thread; re-touched in parallel below
        pool.run(parts, [&](int part, int) {
            const std::size_t begin = n * std::size_t(part) / parts, end = n * std::size_t(part + 1) / parts;
            for (std::size_t i = begin; i < end; i++)
                g_read_buffer[i] = float(i & 1023) * 1e-3f;
        });
    }
    double partial[kProbeThreads] = {};
    const auto start = std::chrono::steady_clock::now();
    pool.run(parts, [&](int part, int) {
        const std::size_t begin = n * std::size_t(part) / parts, end = n * std::size_t(part + 1) / parts;
        partial[part] = sum_floats(g_read_buffer.data() + begin, end - begin);
    });
    const double t = seconds_since(start);
    double total = 0;
    for (double x : partial)
        total += x;
    g_sink = total;
    return t;
}

void release_read_buffer() {
    g_read_buffer = Floats();
}

double read_gbs_now() {
    const std::size_t bytes = std::max<std::size_t>(g_results.read_mib, 1) << 20;
    if (g_read_buffer.size() != bytes / sizeof(float)) time_read_once(bytes);  // allocation and first touch
    double times[3];
    for (double &t : times)
        t = time_read_once(bytes);
    std::sort(std::begin(times), std::end(times));
    return double(bytes) / times[1] * 1e-9;
}

std::size_t last_level_cache_bytes() {
    // Read from sysfs once: every decode row asks (decode_cache_layers).
    static const std::size_t bytes = [] {
        std::size_t largest = 0;
        for (int index = 0; index < 16; index++) {
            const std::string dir = "/sys/devices/system/cpu/cpu0/cache/index" + std::to_string(index) + "/";
            std::ifstream type_file(dir + "type"), size_file(dir + "size");
            std::string type, size;
            if (!(type_file >> type) || !(size_file >> size)) break;
            if (type == "Instruction" || size.empty()) continue;
            std::size_t level_bytes = std::stoull(size);
            const char unit = size.back();
            if (unit == 'K') level_bytes <<= 10;
            if (unit == 'M') level_bytes <<= 20;
            if (unit == 'G') level_bytes <<= 30;
            largest = std::max(largest, level_bytes);
        }
        return largest;
    }();
    return bytes;
}

const ProbeResults &run_probes(int repetitions, std::size_t read_mib) {
    ProbeResults r;
    r.repetitions = std::max(repetitions, 1);
    r.read_mib = read_mib;
    for (int n : {1024, 2048}) {
        time_sgemm_once(n);  // warm-up: OpenBLAS threads and pages
        double best = 1e300;
        for (int rep = 0; rep < r.repetitions; rep++)
            best = std::min(best, time_sgemm_once(n));
        const double gflops = 2.0 * n * double(n) * n / best * 1e-9;
        (n == 1024 ? r.sgemm_1024_gflops : r.sgemm_2048_gflops) = gflops;
    }
    const std::size_t bytes = read_mib << 20;
    time_read_once(bytes);  // first touch + warm-up
    double best = 1e300;
    for (int rep = 0; rep < r.repetitions; rep++)
        best = std::min(best, time_read_once(bytes));
    r.read_gbs = double(bytes) / best * 1e-9;
    release_read_buffer();
    openblas_set_num_threads(1);
    const InstructionRates rates = measure_instruction_rates(kProbeThreads, std::min(r.repetitions, 3));
    r.fma_gflops = rates.fma_gflops;
    r.dpbf16ps_gflops = rates.dpbf16ps_gflops;
    std::fprintf(
        stderr,
        "attngen-bench probes (best of %d): OpenBLAS sgemm 2 threads n=1024 %.1f GFLOP/s, n=2048 %.1f GFLOP/s; "
        "read bandwidth 2 threads over %zu MiB %.1f GB/s; register-resident peaks 2 threads: fp32 FMA %.1f, "
        "bf16 vdpbf16ps %.1f GFLOP/s (0: not available)\n",
        r.repetitions, r.sgemm_1024_gflops, r.sgemm_2048_gflops, read_mib, r.read_gbs, r.fma_gflops, r.dpbf16ps_gflops);
    g_results = r;
    return g_results;
}

const ProbeResults &probes() {
    return g_results;
}

}  // namespace attngen_bench
