// attngen-tune: searches the CPU schedule's parameters for a scheme, shape class and head dim by
// compiling candidates in-process (Halide JIT), checking each against the double-precision
// reference, and timing them with repetitions and a noise-aware comparison. The Halide
// autoschedulers (Adams2019, Mullapudi2016, Li2018) run as additional candidates. Winners are
// written to schedules/tuned/<target>.json, which the build turns into kernels.
#include "tune/cpu_info.h"
#include "tune/jit_attention.h"
#include "tune/playoff.h"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <ctime>
#include <fstream>
#include <functional>
#include <initializer_list>
#include <iostream>
#include <memory>
#include <random>
#include <set>
#include <sstream>
#include <thread>
#include <vector>

#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

using json = nlohmann::json;
using namespace attngen;
using namespace attngen::tune;

namespace {

struct Options {
    std::vector<std::pair<std::string, std::string>> schemes;  // (scheme, options)
    std::vector<ShapeClass> shapes;
    int head_dim = 64;
    double budget = 60;  // seconds of search per entry
    uint64_t seed = 1;
    std::vector<std::string> autoschedulers = {"Mullapudi2016", "Li2018", "Adams2019"};
    double autoscheduler_timeout = 300;  // seconds per autoscheduler candidate (run in a child process)
    // Adams2019's beam search explores ~600k states per pass on this pipeline (minutes per pass, five
    // passes); beam size 1 is its documented greedy mode, one pass that finishes in seconds.
    int adams_beam_size = 1;
    std::string target = ATTNGEN_TUNE_DEFAULT_TARGET;
    std::string out;
    int repetitions = 7;
    // Other entries of the file (scheme[:options], same shape class and head dim) whose parameters are
    // measured as starting points and always reach the playoff: schemes that share plain attention's
    // loops can start from its tuned blocking.
    std::vector<std::string> start_from;
    int playoff_rounds = 5;
};

struct Measured {
    Candidate candidate;
    bool ok = false;
    std::string failure;
    double gflops = 0;  // geometric mean over the tuning shapes of each shape's GFLOP/s (median time)
    double compile_seconds = 0;
    int serialized_unrolls = 0;  // autoscheduled loops unrolled over a run-time extent, made serial
};

// Prefill is tuned on small, medium and large problems with both masks, and scored by the geometric
// mean of their rates, so that a small batch of short sequences counts as much as a long one (a sum
// of times would let the largest shape decide alone: it did, and kept tiles that lose on 256-row
// problems). Decode: a multi-head cache and a grouped-query one (8 KV heads for 32 query heads, as
// Llama 3 8B), where a task that runs a group's heads reads the cache once.
std::vector<ProblemShape> tuning_shapes(ShapeClass shape, int head_dim) {
    if (shape == ShapeClass::Decode)
        return {{1, 32, 32, 1, 4096, head_dim, kMaskCausal}, {1, 32, 8, 1, 4096, head_dim, kMaskCausal}};
    std::vector<ProblemShape> shapes;
    for (const ProblemShape &size :
         {ProblemShape{4, 8, 8, 256, 256, head_dim, kMaskNone}, ProblemShape{1, 8, 8, 512, 512, head_dim, kMaskNone},
          ProblemShape{1, 8, 8, 1024, 1024, head_dim, kMaskNone}}) {
        for (int mask : {kMaskNone, kMaskCausal}) {
            ProblemShape s = size;
            s.mask = mask;
            shapes.push_back(s);
        }
    }
    return shapes;
}

// Small problems with GQA, odd lengths and both masks, for the correctness check.
std::vector<ProblemShape> check_shapes(ShapeClass shape, int head_dim) {
    if (shape == ShapeClass::Decode)
        return {{2, 4, 2, 1, 77, head_dim, kMaskCausal}, {1, 2, 1, 1, 300, head_dim, kMaskNone}};
    return {{1, 4, 2, 45, 77, head_dim, kMaskCausal}, {2, 2, 2, 33, 33, head_dim, kMaskNone}};
}

// Decode is timed cold: before each call a buffer of twice the last-level cache is read, so the call
// reads K and V from memory, as a decoder does with a cache of many layers (attngen-bench's decode rows
// cycle through copies of K and V for the same reason). Timed warm, a 260 MiB L3 held both tuning
// problems and ranked schedules by their compute alone.
volatile float eviction_sink = 0;  // keeps the eviction's reads

void evict_caches() {
    static const std::vector<float> buffer = [] {
        const long last_level = sysconf(_SC_LEVEL3_CACHE_SIZE);
        return std::vector<float>(2 * std::size_t(last_level > 0 ? last_level : 64L << 20) / sizeof(float), 1.0f);
    }();
    float sum = 0;
    for (std::size_t n = 0; n < buffer.size(); n += 16)  // a float per 64-byte line
        sum += buffer[n];
    eviction_sink = sum;
}

bool timed_cold(ShapeClass shape) {
    return shape == ShapeClass::Decode;
}

const char *timing_name(ShapeClass shape) {
    return timed_cold(shape) ? "cold: caches evicted before each call" : "warm";
}

// A compiled candidate's rate on the tuning shapes: the geometric mean of each shape's GFLOP/s at its median
// time over `repetitions` calls.
double tuning_rate(JitAttention &jit, const std::string &scheme, const std::string &options, ShapeClass shape,
                   int head_dim, int repetitions) {
    double log_rate_sum = 0;
    const std::vector<ProblemShape> shapes = tuning_shapes(shape, head_dim);
    const std::function<void()> before_each = timed_cold(shape) ? evict_caches : nullptr;
    for (const ProblemShape &s : shapes) {
        SchemeInputs inputs(scheme, options, s, 7);
        jit.prepare(s, inputs, 13);
        log_rate_sum += std::log(s.flops() / median_of(jit.time(repetitions, before_each)) * 1e-9);
    }
    return std::exp(log_rate_sum / double(shapes.size()));
}

// Compiles, checks and times one candidate. `compiled`: where a candidate that passed keeps its pipeline, so
// that timing it again needs no second compile (minutes for DeBERTa).
Measured measure(const std::string &scheme, const std::string &options, ShapeClass shape, int head_dim,
                 const Candidate &candidate, const Halide::Target &target, int repetitions,
                 std::unique_ptr<JitAttention> *compiled = nullptr) {
    Measured m;
    m.candidate = candidate;
    std::unique_ptr<JitAttention> jit;
    try {
        jit = std::make_unique<JitAttention>(scheme, options, shape, head_dim, candidate, target);
        m.compile_seconds = jit->compile_seconds();
        m.serialized_unrolls = jit->serialized_unrolls();
    } catch (const std::exception &e) {
        m.failure = std::string("does not compile: ") + e.what();
        return m;
    }
    try {
        std::unique_ptr<JitAttention> hand;  // a user-defined scheme's reference: compiled once, if needed
        for (const ProblemShape &s : check_shapes(shape, head_dim)) {
            SchemeInputs inputs(scheme, options, s, 7);
            std::vector<float> q, k, v;
            random_problem(s, 11, q, k, v);
            std::vector<float> got = jit->run(s, q, k, v, inputs);
            std::vector<double> want;
            if (inputs.has_reference()) {
                want = inputs.reference_output(s, q, k, v);
            } else {  // a user-defined scheme: the hand schedule is the reference
                if (!hand) {
                    hand = std::make_unique<JitAttention>(scheme, options, shape, head_dim,
                                                          Candidate{default_cpu_params(shape), ""}, target);
                }
                std::vector<float> h = hand->run(s, q, k, v, inputs);
                want.assign(h.begin(), h.end());
            }
            double worst = 0;
            for (size_t n = 0; n < got.size(); n++) {
                const double error = std::fabs(got[n] - want[n]);
                if (!(error <= 1e-4 + 1e-4 * std::fabs(want[n])))
                    worst = std::max(worst, std::isfinite(error) ? error : 1e30);
            }
            if (worst > 0) {
                m.failure = "wrong result on " + s.text() + ": max abs error " + std::to_string(worst);
                break;
            }
        }
    } catch (const std::exception &e) {
        m.failure = std::string("failed on a check shape: ") + e.what();
    }
    // A hand-space candidate that fails the check is discarded. An autoscheduler's schedule is still
    // timed on the tuning shapes (its estimates), so the file can compare speeds; it can never win.
    if (!m.failure.empty() && candidate.autoscheduler.empty()) return m;
    try {
        m.gflops = tuning_rate(*jit, scheme, options, shape, head_dim, repetitions);
        m.ok = m.failure.empty();
        if (m.ok && compiled) *compiled = std::move(jit);
    } catch (const std::exception &e) {
        m.failure += (m.failure.empty() ? "" : "; ") + std::string("failed to run: ") + e.what();
        m.gflops = 0;
    }
    return m;
}

// The search space of the hand schedule's parameters.
struct Space {
    std::vector<int> tiles, chunks, qk_keys, pv_rows, widths;
    std::vector<bool> merges_online, trims, splits;
    std::vector<int> key_runs;  // decode only
};

Space space_for(ShapeClass shape) {
    if (shape == ShapeClass::Decode)
        return {{1}, {128, 256, 512, 1024, 2048}, {8}, {4}, {8, 16}, {false}, {false, true}, {true, false}, {1, 2, 4}};
    return {{16, 32, 48, 64, 96},
            {64, 128, 256, 512, 1024},
            {4, 6, 8, 12},
            {2, 4, 6, 8},
            {8, 16},
            {false, true},
            {true, false},
            {false},
            {CpuScheduleParams().grouped_decode_key_runs}};
}

template <typename T>
T pick(const std::vector<T> &values, std::mt19937_64 &rng) {
    return values[std::uniform_int_distribution<size_t>(0, values.size() - 1)(rng)];
}

// The parameters of a candidate, numbered for the search: query tile, key chunk, QK keys, P.V rows,
// vector width, merge, key trimming, split-K, decode key runs.
constexpr int kParameterCount = 9;

// `base` with parameter `which` set to each value the space allows.
std::vector<Candidate> along(const Candidate &base, const Space &space, int which) {
    std::vector<Candidate> out;
    auto each = [&](const auto &values, auto set) {
        for (const auto &value : values) {
            Candidate c = base;
            set(c.params, value);
            out.push_back(c);
        }
    };
    switch (which) {
        case 0:
            each(space.tiles, [](CpuScheduleParams &p, int v) { p.blocking.query_tile = v; });
            break;
        case 1:
            each(space.chunks, [](CpuScheduleParams &p, int v) { p.blocking.key_chunk = v; });
            break;
        case 2:
            each(space.qk_keys, [](CpuScheduleParams &p, int v) { p.qk_block_keys = v; });
            break;
        case 3:
            each(space.pv_rows, [](CpuScheduleParams &p, int v) { p.pv_block_rows = v; });
            break;
        case 4:
            each(space.widths, [](CpuScheduleParams &p, int v) { p.vector_width = v; });
            break;
        case 5:
            each(space.merges_online,
                 [](CpuScheduleParams &p, bool v) { p.blocking.merge = v ? Merge::Online : Merge::TwoPass; });
            break;
        case 6:
            each(space.trims, [](CpuScheduleParams &p, bool v) { p.blocking.trim_chunk_keys = v; });
            break;
        case 7:
            each(space.splits, [](CpuScheduleParams &p, bool v) { p.split_keys = v; });
            break;
        default:
            each(space.key_runs, [](CpuScheduleParams &p, int v) { p.grouped_decode_key_runs = v; });
            break;
    }
    return out;
}

// Every parameter drawn at random.
Candidate random_candidate(const Space &space, std::mt19937_64 &rng) {
    Candidate c;
    for (int which = 0; which < kParameterCount; which++)
        c = pick(along(c, space, which), rng);
    return c;
}

// One or two parameters of `base` changed.
Candidate neighbour(const Candidate &base, const Space &space, std::mt19937_64 &rng) {
    Candidate c = base;
    const int changes = 1 + int(rng() % 2);
    for (int n = 0; n < changes; n++)
        c = pick(along(c, space, int(rng() % kParameterCount)), rng);
    return c;
}

// Measures a candidate in a child process with a time limit: the autoschedulers can run for many
// minutes or abort on pipelines they do not handle, and neither may take the tuner down.
Measured measure_isolated(const std::string &scheme, const std::string &options, ShapeClass shape, int head_dim,
                          const Candidate &candidate, const Halide::Target &target, int repetitions, double timeout,
                          int adams_beam_size) {
    Measured m;
    m.candidate = candidate;
    int channel[2];
    if (pipe(channel) != 0) {
        m.failure = "pipe failed";
        return m;
    }
    // A fresh process (this program, --measure-one): no thread pool or JIT state is inherited.
    const std::vector<std::string> arguments = {"attngen-tune",
                                                "--measure-one",
                                                candidate.autoscheduler,
                                                "--scheme",
                                                scheme + (options.empty() ? "" : ":" + options),
                                                "--shape",
                                                shape_class_name(shape),
                                                "--head-dim",
                                                std::to_string(head_dim),
                                                "--target",
                                                target.to_string(),
                                                "--repetitions",
                                                std::to_string(repetitions)};
    const pid_t child = fork();
    if (child == 0) {
        close(channel[0]);
        dup2(channel[1], STDOUT_FILENO);
        if (candidate.autoscheduler == "Adams2019") setenv("HL_BEAM_SIZE", std::to_string(adams_beam_size).c_str(), 1);
        std::vector<char *> argv;
        for (const std::string &argument : arguments)
            argv.push_back(const_cast<char *>(argument.c_str()));
        argv.push_back(nullptr);
        execv("/proc/self/exe", argv.data());
        _exit(127);
    }
    close(channel[1]);
    const auto start = std::chrono::steady_clock::now();
    int status = 0;
    while (waitpid(child, &status, WNOHANG) == 0) {
        if (std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count() > timeout) {
            kill(child, SIGKILL);
            waitpid(child, &status, 0);
            close(channel[0]);
            m.failure = "did not finish within " + std::to_string(int(timeout)) + " s";
            return m;
        }
        std::this_thread::sleep_for(std::chrono::milliseconds(200));
    }
    std::string text;
    char chunk[4096];
    ssize_t n;
    while ((n = read(channel[0], chunk, sizeof chunk)) > 0)
        text.append(chunk, size_t(n));
    close(channel[0]);
    if (text.empty()) {
        m.failure =
            "the candidate's process died (signal " + std::to_string(WIFSIGNALED(status) ? WTERMSIG(status) : 0) + ")";
        return m;
    }
    json r = json::parse(text);
    m.ok = r["ok"];
    m.gflops = r["gflops"];
    m.failure = r["failure"];
    m.compile_seconds = r["compile_seconds"];
    m.serialized_unrolls = r.value("serialized_unrolls", 0);
    return m;
}

json params_json(const CpuScheduleParams &p, ShapeClass shape) {
    json params = {{"query_tile", p.blocking.query_tile},
                   {"key_chunk", p.blocking.key_chunk},
                   {"qk_block_keys", p.qk_block_keys},
                   {"pv_block_rows", p.pv_block_rows},
                   {"vector_width", p.vector_width},
                   {"merge", p.blocking.merge == Merge::Online ? "online" : "twopass"},
                   {"trim_chunk_keys", p.blocking.trim_chunk_keys ? 1 : 0},
                   {"split_keys", p.split_keys ? 1 : 0}};
    // Recorded where it takes effect: a split-K winner's count would mean nothing.
    if (shape == ShapeClass::Decode && decode_key_runs_take_effect(p))
        params["grouped_decode_key_runs"] = p.grouped_decode_key_runs;
    return params;
}

void progress(double elapsed, double budget, int tried, const Measured &best) {
    const int width = 30;
    const int filled = std::min(width, int(width * elapsed / budget));
    std::fprintf(stderr, "\r  [%s%s] %3.0f%% %4.0fs  %3d candidates  best %6.1f GFLOP/s (%s)   ",
                 std::string(filled, '#').c_str(), std::string(width - filled, '.').c_str(),
                 std::min(100.0, 100 * elapsed / budget), elapsed, tried, best.gflops,
                 best.candidate.describe().c_str());
    std::fflush(stderr);
}

std::string now_utc() {
    std::time_t t = std::time(nullptr);
    char text[32];
    std::strftime(text, sizeof text, "%Y-%m-%dT%H:%M:%SZ", std::gmtime(&t));
    return text;
}

// The machine a measurement ran on: /proc/cpuinfo's vendor, model name and family (tune/cpu_info.h), and the
// cores. Read once per run: every entry records it.
const json &machine_json() {
    static const json machine = [] {
        const CpuInfo cpu = read_cpu_info();
        json found = {{"cpu", cpu.model_name.empty() ? std::string("unknown") : cpu.model_name},
                      {"cores", std::thread::hardware_concurrency()}};
        if (!cpu.family.empty()) found["cpu_family"] = std::atoi(cpu.family.c_str());
        if (!cpu.vendor.empty()) found["vendor"] = cpu.vendor;
        return found;
    }();
    return machine;
}

// The CPU vendor whose entries this run writes (GenuineIntel, AuthenticAMD; empty if unknown): schedules
// tuned on one vendor's cores can lose on the other's (sdpa prefill on an Intel Xeon: the entry tuned on
// AMD Zen 5 ran at 0.91x the speed of the one tuned there), so an entry holds for one vendor, and the
// build takes the entries of its machine's vendor first (cmake/AttngenKernels.cmake).
std::string machine_vendor() {
    return machine_json().value("vendor", std::string());
}

// The parameters of a tuned entry (the inverse of params_json).
CpuScheduleParams params_from_json(const json &params, ShapeClass shape) {
    CpuScheduleParams p = default_cpu_params(shape);
    p.blocking.query_tile = params.value("query_tile", p.blocking.query_tile);
    p.blocking.key_chunk = params.value("key_chunk", p.blocking.key_chunk);
    p.qk_block_keys = params.value("qk_block_keys", p.qk_block_keys);
    p.pv_block_rows = params.value("pv_block_rows", p.pv_block_rows);
    p.vector_width = params.value("vector_width", p.vector_width);
    p.split_keys = params.value("split_keys", p.split_keys ? 1 : 0) != 0;
    p.blocking.trim_chunk_keys = params.value("trim_chunk_keys", p.blocking.trim_chunk_keys ? 1 : 0) != 0;
    p.blocking.merge = params.value("merge", std::string("twopass")) == "online" ? Merge::Online : Merge::TwoPass;
    p.grouped_decode_key_runs = params.value("grouped_decode_key_runs", p.grouped_decode_key_runs);
    return p;
}

// `previous` (tune_entry): the entry the build uses now (this one from an earlier run, or the head_dim 64 one it
// falls back to), or null. Its winner is measured again as a starting point (re-tuning after a code change keeps
// it unless something beats it now).
// The search compares candidates measured minutes apart on a machine whose speed drifts by several percent, so
// its best can be a lucky draw. The hand schedule, the required candidates (the earlier winner and the starting
// points) and the search's fastest (at least one; kFinalists finalists in all) are compiled once and timed again,
// round-robin in a shuffled order each round, and decide_playoff (tune/playoff.h) judges them round by round
// against the incumbent (`incumbent`: the earlier winner's description; empty or not a finalist: the hand
// schedule). `best` and `hand` take their playoff medians. Returns the playoff's record for the file.
constexpr double kPlayoffMinGain = 0.02;

json run_playoff(std::vector<Measured> measured, Measured &best, Measured &hand, const std::vector<Measured> &required,
                 const std::string &incumbent, int rounds, std::mt19937_64 &rng,
                 const std::function<std::unique_ptr<JitAttention>(const Candidate &)> &compile,
                 const std::function<double(JitAttention &)> &rate) {
    constexpr int kFinalists = 3;
    std::stable_sort(measured.begin(), measured.end(),
                     [](const Measured &a, const Measured &b) { return a.gflops > b.gflops; });
    std::vector<Measured> finalists = {hand};
    auto known = [&](const Measured &m) {
        return std::any_of(finalists.begin(), finalists.end(),
                           [&](const Measured &f) { return f.candidate.describe() == m.candidate.describe(); });
    };
    for (const Measured &m : required) {
        if (!known(m)) finalists.push_back(m);
    }
    // The search's fastest: enough for kFinalists in all, and at least one whatever the required ones.
    int from_search = 0;
    for (const Measured &m : measured) {
        if (int(finalists.size()) >= kFinalists && from_search > 0) break;
        if (!known(m)) {
            finalists.push_back(m);
            from_search++;
        }
    }
    std::size_t incumbent_index = 0;
    for (std::size_t n = 0; n < finalists.size(); n++) {
        if (finalists[n].candidate.describe() == incumbent) incumbent_index = n;
    }
    // Each finalist compiled once (a DeBERTa pipeline takes minutes to compile; the rounds only time them).
    std::vector<std::unique_ptr<JitAttention>> compiled;
    for (const Measured &f : finalists) {
        try {
            compiled.push_back(compile(f.candidate));
        } catch (const std::exception &e) {
            std::fprintf(stderr, "  playoff: %s no longer compiles: %s\n", f.candidate.describe().c_str(), e.what());
            compiled.push_back(nullptr);
        }
    }
    std::vector<std::vector<double>> rates(finalists.size());
    std::vector<std::size_t> order(finalists.size());
    for (std::size_t n = 0; n < order.size(); n++)
        order[n] = n;
    for (int round = 0; round < rounds; round++) {
        std::shuffle(order.begin(), order.end(), rng);  // no finalist always runs first (or after the same one)
        for (std::size_t n : order) {
            double r = 0;  // a finalist that fails a round has rate 0 there
            try {
                if (compiled[n]) r = rate(*compiled[n]);
            } catch (const std::exception &) {
                r = 0;
            }
            rates[n].push_back(r);
        }
    }
    const PlayoffVerdict verdict = decide_playoff(rates, incumbent_index, kPlayoffMinGain);
    json record = json::array();
    for (std::size_t n = 0; n < finalists.size(); n++) {
        finalists[n].gflops = median_of(rates[n]);
        record.push_back({{"candidate", finalists[n].candidate.describe()},
                          {"gflops_rounds", rates[n]},
                          {"incumbent", n == incumbent_index},
                          {"median_ratio_to_incumbent", verdict.median_ratio[n]},
                          {"rounds_faster", verdict.rounds_won[n]}});
    }
    best = finalists[verdict.winner];
    hand.gflops = finalists[0].gflops;
    if (verdict.winner == incumbent_index) {
        std::fprintf(stderr, "  playoff of %zu over %d rounds: the incumbent %s stays\n", finalists.size(), rounds,
                     best.candidate.describe().c_str());
    } else {
        std::fprintf(stderr,
                     "  playoff of %zu over %d rounds: %s replaces %s (median ratio %.3f, faster in %d rounds)\n",
                     finalists.size(), rounds, best.candidate.describe().c_str(),
                     finalists[incumbent_index].candidate.describe().c_str(), verdict.median_ratio[verdict.winner],
                     verdict.rounds_won[verdict.winner]);
    }
    return record;
}

json tune_entry(const std::string &scheme, const std::string &options, ShapeClass shape, const Options &opt,
                const Halide::Target &target, const json *previous, const std::vector<Candidate> &starts) {
    std::fprintf(stderr, "%s%s %s, head_dim %d, budget %.0f s, seed %llu\n", scheme.c_str(),
                 options.empty() ? "" : (" (" + options + ")").c_str(), shape_class_name(shape), opt.head_dim,
                 opt.budget, (unsigned long long)opt.seed);
    std::mt19937_64 rng(opt.seed);
    const Space space = space_for(shape);
    std::set<std::string> tried;
    json failures = json::array();
    int failed_compile = 0, failed_check = 0;
    auto record_failure = [&](const Measured &m) {
        (m.failure.rfind("does not compile", 0) == 0 ? failed_compile : failed_check)++;
        failures.push_back({{"candidate", m.candidate.describe()}, {"reason", m.failure.substr(0, 300)}});
    };

    Candidate hand_candidate{default_cpu_params(shape), ""};
    // The best candidate's pipeline, kept for timing it again when a challenger needs confirming.
    std::unique_ptr<JitAttention> best_jit;
    Measured hand = measure(scheme, options, shape, opt.head_dim, hand_candidate, target, opt.repetitions, &best_jit);
    tried.insert(hand_candidate.describe());
    if (!hand.ok) throw std::runtime_error("the hand schedule fails: " + hand.failure);
    Measured best = hand;
    json previous_rate = nullptr;
    std::vector<Measured> required;  // the previous winner and the starting points
    // Measures a candidate that must reach the playoff; false if it was already tried or fails.
    auto measure_required = [&](const Candidate &c) {
        if (!tried.insert(c.describe()).second) return false;
        std::unique_ptr<JitAttention> jit;
        Measured m = measure(scheme, options, shape, opt.head_dim, c, target, opt.repetitions, &jit);
        if (!m.ok) {
            record_failure(m);
            return false;
        }
        required.push_back(m);
        if (m.gflops > best.gflops) {
            best = m;
            best_jit = std::move(jit);
        }
        return true;
    };
    std::string incumbent_name;  // the earlier winner, if it still runs (else the hand schedule is the incumbent)
    if (previous && previous->contains("params")) {
        Candidate incumbent{params_from_json((*previous)["params"], shape), ""};
        const bool is_hand = incumbent.describe() == hand_candidate.describe();
        if (measure_required(incumbent)) {
            previous_rate = required.back().gflops;
            incumbent_name = incumbent.describe();
        } else if (is_hand) {
            previous_rate = hand.gflops;
        }
    }
    for (const Candidate &c : starts)
        measure_required(c);
    const auto start = std::chrono::steady_clock::now();
    auto elapsed = [&] { return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count(); };
    std::vector<Measured> measured = {hand};
    measured.insert(measured.end(), required.begin(), required.end());
    auto consider = [&](const Candidate &c) {
        if (!tried.insert(c.describe()).second) return;
        std::unique_ptr<JitAttention> jit;
        Measured m = measure(scheme, options, shape, opt.head_dim, c, target, opt.repetitions, &jit);
        if (m.ok) measured.push_back(m);
        if (!m.ok) {
            record_failure(m);
        } else if (m.gflops > best.gflops * 1.02) {
            // Noise-aware: confirm with a second timing of both (their pipelines kept) before replacing the best.
            auto time_again = [&](JitAttention &pipeline) {
                try {
                    return tuning_rate(pipeline, scheme, options, shape, opt.head_dim, opt.repetitions);
                } catch (const std::exception &) {
                    return 0.0;
                }
            };
            const double again = time_again(*jit);
            const double incumbent = best_jit ? time_again(*best_jit) : 0.0;
            const double candidate_rate = std::max(m.gflops, again);
            const double incumbent_rate = std::max(best.gflops, incumbent);
            if (again > 0 && candidate_rate > incumbent_rate * 1.01) {
                best = m;
                best.gflops = candidate_rate;
                best_jit = std::move(jit);
            } else {
                best.gflops = incumbent_rate;
            }
        }
        progress(elapsed(), opt.budget, int(tried.size()), best);
    };
    // First one sweep along each parameter from the best so far, those that matter most first (a
    // random neighbour changes a given parameter to a given value in ~1 % of draws, so a budget of a
    // few dozen candidates could miss a one-step improvement); then random neighbours and restarts.
    for (int which : {0, 2, 3, 1, 4, 5, 6, 7, 8}) {
        for (const Candidate &c : along(best.candidate, space, which)) {
            if (elapsed() >= opt.budget) break;
            consider(c);
        }
    }
    for (int attempts = 0; elapsed() < opt.budget && attempts < 2000; attempts++)
        consider((rng() % 10 < 7) ? neighbour(best.candidate, space, rng) : random_candidate(space, rng));
    std::fprintf(stderr, "\n");
    const json playoff = run_playoff(
        measured, best, hand, required, incumbent_name, opt.playoff_rounds, rng,
        [&](const Candidate &c) {
            return std::make_unique<JitAttention>(scheme, options, shape, opt.head_dim, c, target);
        },
        [&](JitAttention &jit) { return tuning_rate(jit, scheme, options, shape, opt.head_dim, opt.repetitions); });

    json autoscheduled = json::object();
    for (const std::string &name : opt.autoschedulers) {
        std::fprintf(stderr, "  autoscheduler %s ... ", name.c_str());
        std::fflush(stderr);
        Measured m = measure_isolated(scheme, options, shape, opt.head_dim, Candidate{default_cpu_params(shape), name},
                                      target, opt.repetitions, opt.autoscheduler_timeout, opt.adams_beam_size);
        if (m.ok) {
            std::fprintf(stderr, "%.1f GFLOP/s (schedule + compile %.0f s)\n", m.gflops, m.compile_seconds);
            autoscheduled[name] = {{"gflops", m.gflops}, {"seconds", m.compile_seconds}};
            if (m.serialized_unrolls > 0) autoscheduled[name]["unrolls_made_serial"] = m.serialized_unrolls;
        } else if (m.gflops > 0) {
            std::fprintf(stderr, "%.1f GFLOP/s on the tuning shapes, but not valid: %s\n", m.gflops,
                         m.failure.substr(0, 200).c_str());
            autoscheduled[name] = {{"gflops", m.gflops},
                                   {"valid", false},
                                   {"failure", m.failure.substr(0, 300)},
                                   {"seconds", m.compile_seconds}};
        } else {
            std::fprintf(stderr, "failed: %s\n", m.failure.substr(0, 200).c_str());
            autoscheduled[name] = {{"gflops", nullptr}, {"failure", m.failure.substr(0, 300)}};
        }
        if (name == "Adams2019") autoscheduled[name]["beam_size"] = opt.adams_beam_size;
    }
    std::fprintf(stderr, "  tuned %.1f GFLOP/s (%s), hand %.1f GFLOP/s\n", best.gflops,
                 best.candidate.describe().c_str(), hand.gflops);
    // Without autoscheduler runs, an earlier run's figures are kept, marked with their date.
    // (Figures measured on the same vendor's CPUs only: an entry for any vendor may come from the other.)
    if (opt.autoschedulers.empty() && previous && previous->value("cpu_vendor", std::string()) == machine_vendor() &&
        previous->value("head_dim", 0) == opt.head_dim && previous->contains("autoschedulers") &&
        !(*previous)["autoschedulers"].empty()) {
        autoscheduled = (*previous)["autoschedulers"];
        for (auto &item : autoscheduled.items()) {
            if (!item.value().contains("measured_on")) item.value()["measured_on"] = previous->value("date", "earlier");
        }
    }
    json shapes = json::array();
    for (const ProblemShape &s : tuning_shapes(shape, opt.head_dim))
        shapes.push_back(s.text());
    return {
        {"scheme", scheme},
        {"options", options},
        {"shape_class", shape_class_name(shape)},
        {"head_dim", opt.head_dim},
        {"params", params_json(best.candidate.params, shape)},
        {"gflops", {{"tuned", best.gflops}, {"hand", hand.gflops}, {"previous_winner", previous_rate}}},
        {"hand_params", params_json(hand.candidate.params, shape)},
        {"autoschedulers", autoscheduled},
        {"tuning_shapes", shapes},
        {"timing", timing_name(shape)},
        {"playoff", playoff},
        {"playoff_rounds", opt.playoff_rounds},
        {"playoff_rule",
         "paired: a finalist replaces the incumbent (the earlier winner, else the hand schedule) "
         "when its median ratio to the incumbent's rate in the same round is at least " +
             std::to_string(1.0 + kPlayoffMinGain).substr(0, 4) + " and it was faster in more than half of the rounds"},
        {"started_from", opt.start_from},
        {"candidates",
         {{"tried", int(tried.size())}, {"failed_to_compile", failed_compile}, {"failed_check", failed_check}}},
        {"failures", failures},
        {"budget_seconds", opt.budget},
        {"seed", opt.seed},
        {"machine", machine_json()},
        {"cpu_vendor", machine_vendor()},
        {"date", now_utc()}};
}

// "scheme[:options]" as (scheme, options).
std::pair<std::string, std::string> split_scheme(const std::string &name) {
    const size_t colon = name.find(':');
    if (colon == std::string::npos) return {name, ""};
    return {name.substr(0, colon), name.substr(colon + 1)};
}

int usage() {
    std::cerr
        << "usage: attngen-tune [--scheme NAME[:OPTIONS]]... [--all] [--shape prefill|decode]... [--head-dim D]\n"
           "                    [--budget SECONDS] [--seed N] [--autoschedulers LIST|all|none] [--target T]\n"
           "                    [--repetitions N] [--autoscheduler-timeout SECONDS] [--adams-beam N] [--out FILE]\n"
           "                    [--start-from SCHEME[:OPTIONS]]... [--playoff-rounds N]\n"
           "Tunes the CPU schedule per (scheme, shape class) and merges the winners into FILE\n"
           "(default schedules/tuned/<target>.json). --all tunes every scheme the build knows.\n"
           "--adams-beam: Adams2019's beam size (default 1, its greedy mode; 32 is its full search).\n"
           "--start-from: also start from that scheme's entry in FILE (same shape class and head dim); it\n"
           "always reaches the playoff. --playoff-rounds: rounds of the final round-robin (default 5).\n";
    return 2;
}

std::vector<std::string> split(const std::string &text, char separator) {
    std::vector<std::string> items;
    std::stringstream in(text);
    std::string item;
    while (std::getline(in, item, separator)) {
        if (!item.empty()) items.push_back(item);
    }
    return items;
}

}  // namespace

int main(int argc, char **argv) {
    Options opt;
    bool all = false;
    std::string measure_one;  // internal: measure one autoscheduler candidate, print JSON, exit
    for (int n = 1; n < argc; n++) {
        const std::string arg = argv[n];
        auto value = [&]() -> std::string {
            if (n + 1 >= argc) throw std::runtime_error(arg + " needs a value");
            return argv[++n];
        };
        try {
            if (arg == "--scheme") {
                opt.schemes.push_back(split_scheme(value()));
            } else if (arg == "--all") {
                all = true;
            } else if (arg == "--shape") {
                opt.shapes.push_back(parse_shape_class(value()));
            } else if (arg == "--head-dim") {
                opt.head_dim = std::stoi(value());
            } else if (arg == "--budget") {
                opt.budget = std::stod(value());
            } else if (arg == "--seed") {
                opt.seed = std::stoull(value());
            } else if (arg == "--repetitions") {
                opt.repetitions = std::stoi(value());
            } else if (arg == "--target") {
                opt.target = value();
            } else if (arg == "--start-from") {
                opt.start_from.push_back(value());
            } else if (arg == "--playoff-rounds") {
                opt.playoff_rounds = std::max(1, std::stoi(value()));
            } else if (arg == "--out") {
                opt.out = value();
            } else if (arg == "--measure-one") {
                measure_one = value();
            } else if (arg == "--adams-beam") {
                opt.adams_beam_size = std::stoi(value());
            } else if (arg == "--autoscheduler-timeout") {
                opt.autoscheduler_timeout = std::stod(value());
            } else if (arg == "--autoschedulers") {
                const std::string v = value();
                opt.autoschedulers = v == "none"  ? std::vector<std::string>{}
                                     : v == "all" ? std::vector<std::string>{"Mullapudi2016", "Li2018", "Adams2019"}
                                                  : split(v, ',');
            } else {
                return usage();
            }
        } catch (const std::exception &e) {
            std::cerr << "attngen-tune: " << e.what() << "\n";
            return usage();
        }
    }
    if (!measure_one.empty()) {
        if (opt.schemes.size() != 1 || opt.shapes.size() != 1) return usage();
        const ShapeClass shape = opt.shapes.front();
        Measured r =
            measure(opt.schemes[0].first, opt.schemes[0].second, shape, opt.head_dim,
                    Candidate{default_cpu_params(shape), measure_one}, Halide::Target(opt.target), opt.repetitions);
        std::cout << json{{"ok", r.ok},
                          {"gflops", r.gflops},
                          {"failure", r.failure},
                          {"compile_seconds", r.compile_seconds},
                          {"serialized_unrolls", r.serialized_unrolls}}
                         .dump()
                  << std::flush;
        return 0;
    }
    if (all) {
        for (const std::string &scheme : registered_schemes()) {
            if (scheme == "rope") {
                opt.schemes.push_back({scheme, "pairing:half"});
                opt.schemes.push_back({scheme, "pairing:interleaved"});
            } else {
                opt.schemes.push_back({scheme, ""});
            }
        }
    }
    if (opt.schemes.empty()) return usage();
    if (opt.shapes.empty()) opt.shapes = {ShapeClass::Prefill, ShapeClass::Decode};
    if (opt.out.empty()) opt.out = std::string(ATTNGEN_TUNED_DIR) + "/" + opt.target + ".json";
    const Halide::Target target(opt.target);

    json file = json::object();
    if (std::ifstream existing(opt.out); existing) {
        try {
            existing >> file;
        } catch (...) {
            file = json::object();
        }
    }
    file["target"] = opt.target;
    file["machine"] = machine_json();  // of the latest run; each entry keeps its own
    file["generated_by"] = "attngen-tune (tools/attngen_tune.cpp)";
    if (!file.contains("entries")) file["entries"] = json::array();
    int failures = 0;
    for (const auto &[scheme, options] : opt.schemes) {
        for (ShapeClass shape : opt.shapes) {
            try {
                json &entries = file["entries"];
                // The entry of a (scheme, options) for this shape class, a head dim and a CPU vendor ("" for
                // entries that name none: they serve any vendor without entries of its own).
                auto entry_of = [&](const std::string &entry_scheme, const std::string &entry_options,
                                    const std::string &vendor, int head_dim) {
                    return [&, entry_scheme, entry_options, vendor, head_dim](const json &e) {
                        return e["scheme"] == entry_scheme && e["options"] == entry_options &&
                               e["shape_class"] == shape_class_name(shape) && e["head_dim"] == head_dim &&
                               e.value("cpu_vendor", std::string()) == vendor;
                    };
                };
                // This machine's vendor's entry for the first of `head_dims` it has, else the same for any vendor.
                auto find_entry = [&](const std::string &entry_scheme, const std::string &entry_options,
                                      std::initializer_list<int> head_dims) {
                    for (const std::string &vendor : {machine_vendor(), std::string()}) {
                        for (int head_dim : head_dims) {
                            auto it = std::find_if(entries.begin(), entries.end(),
                                                   entry_of(entry_scheme, entry_options, vendor, head_dim));
                            if (it != entries.end()) return it;
                        }
                    }
                    return entries.end();
                };
                // The entry this run replaces: its vendor's. An entry for any vendor is only a starting point.
                const auto found = std::find_if(entries.begin(), entries.end(),
                                                entry_of(scheme, options, machine_vendor(), opt.head_dim));
                // The incumbent: the entry the build takes for this kernel now (cmake/AttngenKernels.cmake: this
                // head dim's, else the head_dim 64 one).
                const auto previous_entry = find_entry(scheme, options, {opt.head_dim, 64});
                const json previous = previous_entry != entries.end() ? *previous_entry : json(nullptr);
                std::vector<Candidate> starts;
                for (const std::string &name : opt.start_from) {
                    const auto [start_scheme, start_options] = split_scheme(name);
                    const auto start = find_entry(start_scheme, start_options, {opt.head_dim});
                    if (start == entries.end()) throw std::runtime_error("no entry to start from: " + name);
                    starts.push_back(Candidate{params_from_json((*start)["params"], shape), ""});
                }
                json entry =
                    tune_entry(scheme, options, shape, opt, target, previous.is_null() ? nullptr : &previous, starts);
                // In place: a re-run's diff of the file shows only the entries it changed.
                if (found != entries.end()) {
                    *found = entry;
                } else {
                    entries.push_back(entry);
                }
                std::ofstream out(opt.out);
                out << file.dump(2) << "\n";  // written after every entry: a long run keeps its results
            } catch (const std::exception &e) {
                std::fprintf(stderr, "attngen-tune: %s %s: %s\n", scheme.c_str(), shape_class_name(shape), e.what());
                failures++;
            }
        }
    }
    std::fprintf(stderr, "wrote %s\n", opt.out.c_str());
    return failures == 0 ? 0 : 1;
}
