#include "thread_pool.h"

namespace attngen_bench {

ThreadPool::ThreadPool(int threads) : threads_(threads < 1 ? 1 : threads) {
    for (int w = 1; w < threads_; w++)
        workers_.emplace_back([this, w] { work(w); });
}

ThreadPool::~ThreadPool() {
    {
        std::lock_guard<std::mutex> lock(mutex_);
        stop_ = true;
    }
    start_.notify_all();
    for (std::thread &t : workers_)
        t.join();
}

void ThreadPool::drain(int worker) {
    for (;;) {
        int task;
        {
            std::lock_guard<std::mutex> lock(mutex_);
            if (next_ >= tasks_) return;
            task = next_++;
        }
        (*fn_)(task, worker);
    }
}

void ThreadPool::work(int worker) {
    unsigned long seen = 0;
    for (;;) {
        {
            std::unique_lock<std::mutex> lock(mutex_);
            start_.wait(lock, [&] { return stop_ || generation_ != seen; });
            if (stop_) return;
            seen = generation_;
            busy_++;
        }
        drain(worker);
        {
            std::lock_guard<std::mutex> lock(mutex_);
            busy_--;
        }
        done_.notify_all();
    }
}

void ThreadPool::run(int tasks, const std::function<void(int task, int worker)> &fn) {
    if (threads_ == 1 || tasks <= 1) {
        for (int t = 0; t < tasks; t++)
            fn(t, 0);
        return;
    }
    {
        std::lock_guard<std::mutex> lock(mutex_);
        fn_ = &fn;
        tasks_ = tasks;
        next_ = 0;
        generation_++;
    }
    start_.notify_all();
    drain(0);
    std::unique_lock<std::mutex> lock(mutex_);
    // All tasks are taken; wait for the workers still running one. A worker that wakes late finds
    // no task left (next_ == tasks_) and never touches fn_.
    done_.wait(lock, [&] { return busy_ == 0 && next_ >= tasks_; });
    fn_ = nullptr;
}

ThreadPool &baseline_pool() {
    static ThreadPool pool(kBaselineThreads);
    return pool;
}

}  // namespace attngen_bench
