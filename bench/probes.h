// attngen-bench: machine probes, run first in the process: OpenBLAS sgemm with 2 threads (the compute
// reference for pct_sgemm_peak) and a 2-thread streaming read (the bandwidth reference for pct_read_bw).
#pragma once

#include <cstddef>

namespace attngen_bench {

struct ProbeResults {
    double sgemm_1024_gflops = 0, sgemm_2048_gflops = 0;  // best of the repetitions
    double read_gbs = 0;                                  // best of the repetitions (1e9 bytes/s)
    double fma_gflops = 0, dpbf16ps_gflops = 0;           // instruction peaks, 2 threads (0: CPU lacks it)
    std::size_t read_mib = 0;
    int repetitions = 0;
    double sgemm_peak_gflops() const {
        return sgemm_1024_gflops > sgemm_2048_gflops ? sgemm_1024_gflops : sgemm_2048_gflops;
    }
};

// Runs all probes (best of `repetitions` each) and stores the results (probes()).
// OpenBLAS is left single-threaded afterwards.
const ProbeResults &run_probes(int repetitions, std::size_t read_mib);
const ProbeResults &probes();

constexpr int kProbeThreads = 2;
// One timed sgemm C = A B of n x n with kProbeThreads OpenBLAS threads, in seconds.
double time_sgemm_once(int n);
// One timed sum of `bytes` of floats by kProbeThreads std::threads, in seconds (buffer kept between calls).
double time_read_once(std::size_t bytes);
void release_read_buffer();
// The read bandwidth now (1e9 bytes/s): the median of 3 timed reads of the start-up probe's buffer size, which
// stays allocated for the next call. Decode rows take it right after their timed loop, as their pct_read_bw
// reference: the memory's speed drifts with the host (a start-up probe read 21.8 GB/s where the run's median
// was 27.6), so a reference from minutes earlier could move a row's percentage by a quarter.
double read_gbs_now();

// The largest data cache's size in bytes (the last level: L3 where there is one), from sysfs; 0 if unknown.
std::size_t last_level_cache_bytes();

}  // namespace attngen_bench
