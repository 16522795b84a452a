// attngen-bench: a persistent pool of std::threads for the unfused baselines and the bandwidth probe
// (the calling thread is worker 0), so per-call thread start-up does not count in small problems.
#pragma once

#include <condition_variable>
#include <functional>
#include <mutex>
#include <thread>
#include <vector>

namespace attngen_bench {

class ThreadPool {
public:
    explicit ThreadPool(int threads);
    ~ThreadPool();
    ThreadPool(const ThreadPool &) = delete;
    ThreadPool &operator=(const ThreadPool &) = delete;

    int size() const { return threads_; }
    // Runs fn(task, worker) for task in [0, tasks), dynamically over the workers; returns when all are done.
    void run(int tasks, const std::function<void(int task, int worker)> &fn);

private:
    void work(int worker);
    void drain(int worker);

    int threads_;
    std::vector<std::thread> workers_;
    std::mutex mutex_;
    std::condition_variable start_, done_;
    const std::function<void(int, int)> *fn_ = nullptr;
    int tasks_ = 0, next_ = 0, busy_ = 0;
    unsigned long generation_ = 0;
    bool stop_ = false;
};

// The pool of the baselines: 2 threads (the machine's cores; OpenBLAS runs single-threaded inside).
ThreadPool &baseline_pool();
constexpr int kBaselineThreads = 2;

}  // namespace attngen_bench
