// attngen-bench: Google Benchmark suite of attngen's fused CPU kernels against unfused baselines.
//
//   probe/...                         machine probes (OpenBLAS sgemm and streaming read, 2 threads);
//                                     also run before anything else, for the percent-of-peak counters
//   attngen/<scheme>/<mask>/<shape>   the fused kernel (attngen::attention, device CPU)
//   attngen_bf16/<scheme>/<mask>/<shape>  the same with bfloat16 q, k, v and out (fp32 math)
//   attngen_kvcache/<scheme>/<mask>/<shape>  RoPE / xPos decode over a cache of keys rotated once
//                                     beforehand (desc.keys_rotated): only the query is rotated per call
//   attngen_bf16_kvcache/<scheme>/<mask>/<shape>  the same over a bfloat16 cache (rotated by the bf16
//                                     transforms), with bfloat16 q, k, v and out
//   openblas/<scheme>/<mask>/<shape>  unfused: per-head sgemm, dense positional bias, softmax, sgemm
//   onednn/<scheme>/<mask>/<shape>    unfused with oneDNN batched matmul + softmax primitives
//   naive/<scheme>/<mask>/<shape>     straightforward loops, one thread (small shapes and decode)
//
// shape = BxHxLqxLkxD. Every implementation is validated once per configuration against a double
// reference on a few rows before it is timed (SkipWithError on mismatch). Counters: GFLOP/s,
// GFLOP/s_with_extra (Shaw, TXL, DeBERTa), pct_sgemm_peak, and for decode GB/s, read_probe_GB/s (a read probe
// run right after the row's timed loop) and pct_read_bw (against it); for attngen's rows of a positional scheme,
// time_over_plain_paired (its time over plain attention's, the two called in turn: paired_time_ratio) and, with
// extra products, pct_plain_with_extra_paired (its GFLOP/s with them as a percentage of plain's, from that ratio);
// paired the same way, on attngen's fp32 prefill rows speedup_over_onednn_paired (the unfused oneDNN baseline's
// time over attngen's) and, causal, pct_noncausal_paired (causal GFLOP/s as a percentage of the same kernel's
// without the mask), and on the bf16 rows speedup_over_fp32_paired (the fp32 kernel's time over bf16's);
// max_err is the validation's max abs error. Times are wall-clock (UseRealTime). attngen's decode rows
// cycle through kv_layers copies of K and V, twice the last-level cache (at least 256 MiB) together, so each call reads
// them from memory (decode_cache_layers); the baselines read one copy, which a large enough cache keeps
// warm for them.
//
// Extra flags (before Google Benchmark's): --attngen_probe_reps=N (default 5),
// --attngen_probe_mib=N (read-probe buffer, default 512 or 4x the last-level cache), --attngen_ftz=1 (flush denormals
// to zero and treat denormal inputs as zero in every thread: set in the main thread's MXCSR before any thread is
// created, so OpenBLAS, oneDNN's OpenMP and Halide's threads inherit it; default off).
#include "attngen/attngen.hpp"
#include "bench_problem.h"
#include "naive.h"
#include "onednn_baseline.h"
#include "probes.h"
#include "tune/cpu_info.h"
#include "unfused.h"

#include <benchmark/benchmark.h>
#include <cblas.h>

#include <algorithm>
#include <array>
#include <chrono>
#include <cmath>
#include <cstdio>
#if defined(__SSE__)
#include <xmmintrin.h>
#endif
#include <unistd.h>
#include <cstdlib>
#include <cstring>
#include <exception>
#include <functional>
#include <limits>
#include <map>
#include <memory>
#include <string>
#include <thread>
#include <vector>

namespace attngen_bench {
namespace {

enum class Impl { Attngen, AttngenBf16, AttngenKvCache, AttngenBf16KvCache, Openblas, Onednn, Naive };

bool is_bf16(Impl impl) {
    return impl == Impl::AttngenBf16 || impl == Impl::AttngenBf16KvCache;
}
bool reads_key_cache(Impl impl) {
    return impl == Impl::AttngenKvCache || impl == Impl::AttngenBf16KvCache;
}

const char *impl_name(Impl impl) {
    switch (impl) {
        case Impl::Attngen:
            return "attngen";
        case Impl::AttngenBf16:
            return "attngen_bf16";
        case Impl::AttngenKvCache:
            return "attngen_kvcache";
        case Impl::AttngenBf16KvCache:
            return "attngen_bf16_kvcache";
        case Impl::Openblas:
            return "openblas";
        case Impl::Onednn:
            return "onednn";
        case Impl::Naive:
            return "naive";
    }
    return "?";
}

// Shapes (B, H, Hkv, Lq, Lk, D); Hkv = H (multi-head attention) except the grouped-query decode
// (8 KV heads, as Llama 3 and Mistral).
const std::vector<Shape> &shapes() {
    static const std::vector<Shape> list = {
        {1, 8, 8, 512, 512, 64},  {1, 8, 8, 2048, 2048, 64}, {1, 16, 16, 1024, 1024, 128},
        {4, 8, 8, 256, 256, 64},  {1, 32, 32, 1, 4096, 128},  // decode
        {1, 32, 8, 1, 4096, 128},                             // decode, GQA
    };
    return list;
}

// The naive baseline runs only on the small shapes and decode.
bool naive_runs(const Shape &s) {
    return s.decode() || double(s.batch) * s.heads * s.q_len * s.k_len <= 8.0 * 512 * 512;
}

void set_counters(benchmark::State &state, const Config &c, double max_err, double bytes_per_element) {
    using benchmark::Counter;
    const ProbeResults &probe = probes();
    const double f = flops(c);
    state.counters["GFLOP/s"] = Counter(f * 1e-9, Counter::kIsIterationInvariantRate);
    if (has_extra_flops(c.scheme))
        state.counters["GFLOP/s_with_extra"] = Counter(flops_with_extra(c) * 1e-9, Counter::kIsIterationInvariantRate);
    if (probe.sgemm_peak_gflops() > 0)
        state.counters["pct_sgemm_peak"] =
            Counter(f * 1e-9 / probe.sgemm_peak_gflops() * 100.0, Counter::kIsIterationInvariantRate);
    if (c.shape.decode()) {
        const double bytes = kv_bytes(c, bytes_per_element);
        state.counters["GB/s"] = Counter(bytes * 1e-9, Counter::kIsIterationInvariantRate);
        // Against the memory's speed measured now (read_gbs_now), not at start-up.
        const double read_gbs = read_gbs_now();
        state.counters["read_probe_GB/s"] = Counter(read_gbs);
        state.counters["pct_read_bw"] = Counter(bytes * 1e-9 / read_gbs * 100.0, Counter::kIsIterationInvariantRate);
    }
    state.counters["max_err"] = Counter(max_err);
}

bool transforms_keys(SchemeId scheme) {
    return scheme == SchemeId::RopeHalf || scheme == SchemeId::RopeInterleaved || scheme == SchemeId::Xpos;
}

// Decode calls cycle through this many copies of K and V (a deeper cache's layers, read once per call
// each, as a decoder reads one layer's cache per step): together at least twice the last-level cache,
// and at least kMinDecodeCycleBytes, so each call reads its keys and values from memory. With one copy,
// K and V of (1,32,1,4096,128) (128 MiB) stayed in a 260 MiB L3 between calls and decode read them at
// 2.4x the memory's speed. The floor covers hosts whose sysfs has no cache entries (the 2-core Zen 5 VM:
// there every decode row had one copy, and with 8 KV heads K and V, 32 MiB in fp32 and 16 in bf16, came
// partly or wholly from its 32 MiB L3).
constexpr double kMinDecodeCycleBytes = 256.0 * (1 << 20);
int decode_cache_layers(const Config &c, double bytes_per_element) {
    if (!c.shape.decode()) return 1;
    const double layer = kv_bytes(c, bytes_per_element), llc = double(last_level_cache_bytes());
    return std::clamp(int(std::ceil(std::max(2.0 * llc, kMinDecodeCycleBytes) / layer)), 1, 64);
}

// An input K or V of the problem's shape [B, Hkv, Lk, D] as a tensor: fp32, or bf16 bits.
attngen::Tensor kv_tensor(const Problem &p, const float *data) {
    return attngen::tensor(data, {p.B, p.Hkv, p.Lk, p.D});
}
attngen::Tensor kv_tensor(const Problem &p, const uint16_t *data) {
    return attngen::bf16_tensor(data, {p.B, p.Hkv, p.Lk, p.D});
}

// Decode layers 1 .. layers-1 of a call cycle (decode_cache_layers): copies of `k` and `v` kept in `k_copies` and
// `v_copies`, their tensors appended to `k_tensors` and `v_tensors` (which hold layer 0, the problem's own).
template <typename T>
void append_layers(const Problem &p, int layers, const AlignedVector<T> &k, const AlignedVector<T> &v,
                   std::vector<AlignedVector<T>> &k_copies, std::vector<AlignedVector<T>> &v_copies,
                   std::vector<attngen::Tensor> &k_tensors, std::vector<attngen::Tensor> &v_tensors) {
    k_copies.reserve(k_copies.size() + layers);
    v_copies.reserve(v_copies.size() + layers);
    for (int layer = 1; layer < layers; layer++) {
        k_copies.push_back(k);
        v_copies.push_back(v);
        k_tensors.push_back(kv_tensor(p, k_copies.back().data()));
        v_tensors.push_back(kv_tensor(p, v_copies.back().data()));
    }
}

// The keys `raw` rotated once into `rotated` (float32 or bfloat16), as a decoder's KV cache holds them
// (attngen_rope, or attngen_xpos with downscale, at positions 0..Lk-1), and `desc` switched to use them.
template <typename T>
AlignedVector<T> rotated_key_cache(const Problem &p, attngen_attention_desc &desc, const AlignedVector<T> &keys) {
    AlignedVector<T> cache(keys.size());
    const attngen::Tensor raw = kv_tensor(p, keys.data());
    const attngen::Tensor rotated = kv_tensor(p, cache.data());
    char error[512] = "";
    attngen_status status;
    if (desc.scheme == ATTNGEN_SCHEME_ROPE) {
        status = attngen_rope(&raw, nullptr, &desc.rope, int32_t(p.Lk), &rotated, error, sizeof error);
    } else {
        desc.xpos_centre_set = 1;
        desc.xpos_centre = p.xpos_centre;
        status = attngen_xpos(&raw, nullptr, desc.xpos_scale_base, p.xpos_centre, 1, &rotated, error, sizeof error);
    }
    if (status != ATTNGEN_OK) throw std::runtime_error(std::string("rotating the key cache: ") + error);
    desc.keys_rotated = 1;
    return cache;
}

// One implementation's time over another's, paired: the two called in turn, in alternating order, and the
// median of the per-pair ratios. The host's drift, which moved whole rows 1.2-1.7x apart between runs of
// one binary on a 2-core VM, cancels within a pair; the rows' own times (and ratios of their medians) do
// not. One warm-up pair, then enough pairs for about 0.3 s (5 to 25).
// With `warm_up` > 0 each turn is a block: calls, untimed, until `warm_up` has passed, then kTimedBlockCalls
// timed calls (their median). The untimed calls absorb the switch from the other side: oneDNN's OpenMP
// workers spin for milliseconds after a call, and attngen's next 2-4 calls at 4x256^2 took 1.6-2x as long
// as the rest (AMD Zen 5 VM, 2026-12-06). Sleeping instead (10 ms before every call, until then) lets the
// VM's cores idle, and the first call after an idle core is slow for any implementation: attngen
// at 4x256^2 took 3.8 ms after a 10 ms sleep against 2.0 ms back to back, which pulled the ratio towards 1.
double paired_time_ratio(const std::function<void()> &measured, const std::function<void()> &reference,
                         std::chrono::microseconds warm_up = std::chrono::microseconds(0)) {
    using Clock = std::chrono::steady_clock;
    constexpr int kTimedBlockCalls = 3;
    const int timed_calls = warm_up.count() > 0 ? kTimedBlockCalls : 1;
    auto seconds = [&](const std::function<void()> &call) {
        const auto block_start = Clock::now();
        while (Clock::now() - block_start < warm_up)
            call();
        std::array<double, kTimedBlockCalls> times{};
        for (int n = 0; n < timed_calls; n++) {
            const auto start = Clock::now();
            call();
            times[n] = std::chrono::duration<double>(Clock::now() - start).count();
        }
        std::sort(times.begin(), times.begin() + timed_calls);
        return times[timed_calls / 2];
    };
    const auto warm_up_pair_start = Clock::now();
    seconds(reference);
    seconds(measured);
    const double pair_seconds = std::chrono::duration<double>(Clock::now() - warm_up_pair_start).count();
    const int pairs = std::clamp(int(0.3 / std::max(pair_seconds, 1e-6)), 5, 25) | 1;  // odd: one median
    std::vector<double> ratios;
    for (int n = 0; n < pairs; n++) {
        double reference_seconds, measured_seconds;
        if (n % 2 == 0) {
            reference_seconds = seconds(reference);
            measured_seconds = seconds(measured);
        } else {
            measured_seconds = seconds(measured);
            reference_seconds = seconds(reference);
        }
        if (reference_seconds > 0) ratios.push_back(measured_seconds / reference_seconds);
    }
    if (ratios.empty()) return 0;
    std::nth_element(ratios.begin(), ratios.begin() + ratios.size() / 2, ratios.end());
    return ratios[ratios.size() / 2];
}

// Validation results per benchmark name: each configuration is validated on the first call only.
std::map<std::string, Check> &validated() {
    static std::map<std::string, Check> results;
    return results;
}

void bench_attention(benchmark::State &state, Impl impl, Config c) {
    std::shared_ptr<const Problem> problem;
    try {
        problem = cached_problem(c);
    } catch (const std::exception &e) {
        state.SkipWithError((std::string("set-up failed: ") + e.what()).c_str());
        return;
    }
    const Problem &p = *problem;
    const std::string key = std::string(impl_name(impl)) + "/" + c.name();
    Floats out(p.q_size(), std::numeric_limits<float>::quiet_NaN());

    std::function<void()> call;
    std::string label;
    std::unique_ptr<OpenblasAttention> openblas;
    std::unique_ptr<OnednnAttention> onednn;
    attngen_attention_desc desc{};
    attngen::Tensor q_t{}, k_t{}, v_t{}, o_t{};
    attngen::Status status;
    AlignedVector<uint16_t> q16, k16, v16, out16;  // bf16 copies (Impl::AttngenBf16)
    // bf16 copies of the tables bf16 kernels take in bf16, as a bf16 model holds them (Impl::AttngenBf16)
    AlignedVector<uint16_t> txl_r16, pos_key16, pos_query16;
    Floats k_cache;  // rotated keys (Impl::AttngenKvCache; Impl::AttngenBf16KvCache's are in k16)
    // Decode: the other layers' K and V (decode_cache_layers), as tensors per layer (layer 0: the problem's).
    std::vector<Floats> layer_k, layer_v;
    std::vector<AlignedVector<uint16_t>> layer_k16, layer_v16;
    std::vector<attngen::Tensor> layer_k_t, layer_v_t;
    std::size_t next_layer = 0;  // the layer the next call reads (plain's paired calls take turns with it)
    int layers = 1;
    // One attngen call on the next layer's K and V.
    auto attention_on_next_layer = [&](const attngen_attention_desc &call_desc) {
        const std::size_t layer = next_layer++ % layer_k_t.size();
        return attngen::attention(q_t, layer_k_t[layer], layer_v_t[layer], o_t, call_desc);
    };
    auto to_bf16 = [](const Floats &x) {
        AlignedVector<uint16_t> y(x.size());
        for (std::size_t n = 0; n < x.size(); n++)
            y[n] = attngen::to_bf16(x[n]);
        return y;
    };
    try {
        switch (impl) {
            case Impl::Attngen:
            case Impl::AttngenBf16:
            case Impl::AttngenKvCache:
            case Impl::AttngenBf16KvCache: {
                desc = make_desc(p);
                if (impl == Impl::AttngenKvCache) k_cache = rotated_key_cache(p, desc, p.k);
                if (!is_bf16(impl)) {
                    const float *keys = impl == Impl::AttngenKvCache ? k_cache.data() : p.k.data();
                    q_t = attngen::tensor(p.q.data(), {p.B, p.H, p.Lq, p.D});
                    k_t = kv_tensor(p, keys);
                    v_t = kv_tensor(p, p.v.data());
                    o_t = attngen::tensor(out.data(), {p.B, p.H, p.Lq, p.D});
                } else {
                    q16 = to_bf16(p.q);
                    k16 = to_bf16(p.k);
                    if (impl == Impl::AttngenBf16KvCache) k16 = rotated_key_cache(p, desc, k16);
                    v16 = to_bf16(p.v);
                    out16.assign(p.q_size(), 0);
                    q_t = attngen::bf16_tensor(q16.data(), {p.B, p.H, p.Lq, p.D});
                    k_t = kv_tensor(p, k16.data());
                    v_t = kv_tensor(p, v16.data());
                    o_t = attngen::bf16_tensor(out16.data(), {p.B, p.H, p.Lq, p.D});
                    // Transformer-XL's R and DeBERTa's projections follow q's element type.
                    auto table_to_bf16 = [&](attngen_tensor &table, const Floats &values,
                                             AlignedVector<uint16_t> &bits) {
                        if (!table.data) return;
                        bits = to_bf16(values);
                        table.data = bits.data();
                        table.dtype = ATTNGEN_BFLOAT16;
                    };
                    table_to_bf16(desc.txl_r, p.txl_r, txl_r16);
                    table_to_bf16(desc.deberta_pos_key, p.deberta_pos_key, pos_key16);
                    table_to_bf16(desc.deberta_pos_query, p.deberta_pos_query, pos_query16);
                }
                attngen::RunInfo info{};
                status = attngen::attention(q_t, k_t, v_t, o_t, desc, &info);
                if (!status) {
                    state.SkipWithError((std::string(impl_name(impl)) + " failed: " + status.message).c_str());
                    return;
                }
                for (std::size_t n = 0; n < out16.size(); n++)  // bf16: the output the check reads
                    out[n] = attngen::from_bf16(out16[n]);
                label = std::string(info.kernel) + " | " + info.cpu_target;
                layers = decode_cache_layers(c, is_bf16(impl) ? 2.0 : 4.0);
                layer_k_t.assign(1, k_t);
                layer_v_t.assign(1, v_t);
                if (is_bf16(impl))
                    append_layers(p, layers, k16, v16, layer_k16, layer_v16, layer_k_t, layer_v_t);
                else
                    append_layers(p, layers, impl == Impl::AttngenKvCache ? k_cache : p.k, p.v, layer_k, layer_v,
                                  layer_k_t, layer_v_t);
                call = [&] { status = attention_on_next_layer(desc); };
                break;
            }
            case Impl::Openblas:
                openblas = std::make_unique<OpenblasAttention>(p);
                label = openblas->label();
                call = [&] { openblas->run(out.data()); };
                openblas->run(out.data());
                break;
            case Impl::Onednn:
                onednn = std::make_unique<OnednnAttention>(p);
                label = onednn->label();
                call = [&] { onednn->run(out.data()); };
                onednn->run(out.data());
                break;
            case Impl::Naive:
                label = "naive loops, 1 thread, float32";
                call = [&] { naive_attention(p, out.data()); };
                if (!validated().count(key)) naive_attention(p, out.data());
                break;
        }
    } catch (const std::exception &e) {
        state.SkipWithError((std::string(impl_name(impl)) + " failed: " + e.what()).c_str());
        return;
    }

    // The first run (above) is the warm-up; the first call of a configuration validates it.
    auto known = validated().find(key);
    if (known == validated().end()) {
        known = validated().emplace(key, check_output(p, out.data(), is_bf16(impl))).first;
    }
    const Check &check = known->second;
    if (!check.ok) {
        state.SkipWithError(
            ("validation failed (max abs err " + std::to_string(check.max_abs) + "): " + check.text).c_str());
        return;
    }

    for (auto _ : state) {
        call();
        benchmark::ClobberMemory();
    }
    if (!status) {
        state.SkipWithError(("attngen failed: " + status.message).c_str());
        return;
    }
    set_counters(state, c, check.max_abs, is_bf16(impl) ? 2.0 : 4.0);
    if (c.shape.decode()) state.counters["kv_layers"] = layers;
    const bool attngen_row = impl == Impl::Attngen || is_bf16(impl) || impl == Impl::AttngenKvCache;
    if (attngen_row && c.scheme != SchemeId::Sdpa) {
        // Plain attention's calls take turns with this scheme's on the same tensors (and decode layers).
        attngen_attention_desc plain_desc;
        attngen_attention_desc_init(&plain_desc);
        plain_desc.mask = desc.mask;
        plain_desc.device = desc.device;
        attngen::Status plain_status;
        const std::function<void()> plain = [&] { plain_status = attention_on_next_layer(plain_desc); };
        const double paired = paired_time_ratio(call, plain);
        if (plain_status && status && paired > 0) {
            state.counters["time_over_plain_paired"] = paired;
            if (has_extra_flops(c.scheme))
                state.counters["pct_plain_with_extra_paired"] = flops_with_extra(c) / flops(c) / paired * 100.0;
        }
    }
    if (impl == Impl::Attngen && c.causal && !c.shape.decode()) {
        // The same kernel without the mask, in turn: causal GFLOP/s (half the work) as a percentage of
        // non-causal's, free of the drift between the two rows.
        attngen_attention_desc full_desc = desc;
        full_desc.mask = ATTNGEN_MASK_NONE;
        attngen::Status full_status;
        const std::function<void()> full = [&] { full_status = attention_on_next_layer(full_desc); };
        const double paired = paired_time_ratio(call, full);
        if (full_status && status && paired > 0) state.counters["pct_noncausal_paired"] = 50.0 / paired;
    }
    if (impl == Impl::Attngen && !c.shape.decode()) {
        // The unfused oneDNN baseline (the best unfused peer) in turn: attngen's speed-up over it.
        try {
            OnednnAttention baseline(p);
            Floats baseline_out(p.q_size());
            const std::function<void()> unfused = [&] { baseline.run(baseline_out.data()); };
            const double paired = paired_time_ratio(call, unfused, std::chrono::milliseconds(20));
            if (status && paired > 0) state.counters["speedup_over_onednn_paired"] = 1.0 / paired;
        } catch (const std::exception &) {
            // No oneDNN pairing where the baseline cannot run this configuration (its own row says why).
        }
    }
    if (impl == Impl::AttngenBf16) {
        // The fp32 kernel on the same values (and, for decode, as many layers of its own: the problem's
        // K and V, then copies) in turn.
        std::vector<Floats> fp32_k, fp32_v;
        std::vector<attngen::Tensor> fp32_k_t{kv_tensor(p, p.k.data())};
        std::vector<attngen::Tensor> fp32_v_t{kv_tensor(p, p.v.data())};
        append_layers(p, decode_cache_layers(c, 4.0), p.k, p.v, fp32_k, fp32_v, fp32_k_t, fp32_v_t);
        Floats fp32_out(p.q_size());
        const attngen::Tensor fp32_q = attngen::tensor(p.q.data(), {p.B, p.H, p.Lq, p.D});
        const attngen::Tensor fp32_o = attngen::tensor(fp32_out.data(), {p.B, p.H, p.Lq, p.D});
        std::size_t fp32_next = 0;
        attngen::Status fp32_status;
        const attngen_attention_desc fp32_desc = make_desc(p);  // float32 tables (desc's follow bf16)
        const std::function<void()> fp32 = [&] {
            const std::size_t layer = fp32_next++ % fp32_k_t.size();
            fp32_status = attngen::attention(fp32_q, fp32_k_t[layer], fp32_v_t[layer], fp32_o, fp32_desc);
        };
        const double paired = paired_time_ratio(call, fp32);
        if (fp32_status && status && paired > 0) state.counters["speedup_over_fp32_paired"] = 1.0 / paired;
    }
    state.SetLabel(label);
}

void bench_probe_sgemm(benchmark::State &state, int n) {
    for (auto _ : state)
        state.SetIterationTime(time_sgemm_once(n));
    const ProbeResults &probe = probes();
    using benchmark::Counter;
    state.counters["GFLOP/s"] = Counter(2.0 * n * double(n) * n * 1e-9, Counter::kIsIterationInvariantRate);
    state.counters["best_GFLOP/s"] = n == 1024 ? probe.sgemm_1024_gflops : probe.sgemm_2048_gflops;
    state.SetLabel("OpenBLAS sgemm, 2 threads; best_GFLOP/s: best of the start-up probe, the pct_sgemm_peak reference");
}

void bench_probe_read(benchmark::State &state, std::size_t mib) {
    time_read_once(mib << 20);  // allocation and first touch
    for (auto _ : state)
        state.SetIterationTime(time_read_once(mib << 20));
    using benchmark::Counter;
    state.counters["GB/s"] = Counter(double(mib << 20) * 1e-9, Counter::kIsIterationInvariantRate);
    state.counters["best_GB/s"] = probes().read_gbs;
    state.SetLabel("float sum, 2 std::threads; best_GB/s: best of the start-up probe");
}

void register_benchmarks(std::size_t probe_mib) {
    benchmark::RegisterBenchmark("probe/sgemm_2threads/1024", bench_probe_sgemm, 1024)
        ->UseManualTime()
        ->Iterations(20)
        ->Unit(benchmark::kMillisecond);
    benchmark::RegisterBenchmark("probe/sgemm_2threads/2048", bench_probe_sgemm, 2048)
        ->UseManualTime()
        ->Iterations(5)
        ->Unit(benchmark::kMillisecond);
    benchmark::RegisterBenchmark(("probe/read_2threads/" + std::to_string(probe_mib) + "MiB").c_str(), bench_probe_read,
                                 probe_mib)
        ->UseManualTime()
        ->Iterations(5)
        ->Unit(benchmark::kMillisecond);
    for (const Shape &shape : shapes())
        for (SchemeId scheme : all_schemes())
            for (bool causal : {true, false}) {
                const Config c{scheme, causal, shape};
                for (Impl impl : {Impl::Attngen, Impl::AttngenBf16, Impl::AttngenKvCache, Impl::AttngenBf16KvCache,
                                  Impl::Openblas, Impl::Onednn, Impl::Naive}) {
                    if (impl == Impl::Naive && !naive_runs(shape)) continue;
                    if (reads_key_cache(impl) && !(shape.decode() && transforms_keys(scheme))) continue;
                    const std::string name = std::string(impl_name(impl)) + "/" + c.name();
                    auto *b = benchmark::RegisterBenchmark(name.c_str(), bench_attention, impl, c);
                    b->UseRealTime()->Unit(benchmark::kMillisecond);
                    if (impl == Impl::Naive) b->Iterations(1);
                }
            }
}

// Removes --attngen_<name>=value from argv; returns the value or `fallback`.
long take_flag(int *argc, char **argv, const char *name, long fallback) {
    const std::string prefix = std::string("--attngen_") + name + "=";
    long value = fallback;
    int out = 1;
    for (int in = 1; in < *argc; in++) {
        if (std::strncmp(argv[in], prefix.c_str(), prefix.size()) == 0) {
            value = std::strtol(argv[in] + prefix.size(), nullptr, 10);
        } else {
            argv[out++] = argv[in];
        }
    }
    *argc = out;
    argv[out] = nullptr;
    return value;
}

// Debian's OpenBLAS (0.3.21) falls back to its Prescott (SSE3) kernels on CPUs it does not know (seen on
// an Intel Xeon of family 6, model 207): sgemm at 65 GFLOP/s where the named core runs it at 310, which
// would make the sgemm probe and the OpenBLAS baseline five times too slow. There, unless the user chose
// a core, the CPU's features name one; OpenBLAS reads OPENBLAS_CORETYPE when it loads, so the process
// runs itself again with it set (execv returns only on failure: then the detected core stays).
void use_openblas_core_for_cpu(char **argv) {
#if defined(__x86_64__) && defined(__GNUC__)  // the x86 cores only; elsewhere OpenBLAS's own choice stays
    if (std::getenv("OPENBLAS_CORETYPE") != nullptr) return;
    const std::string detected = openblas_get_corename();
    const char *const fallbacks[] = {"Prescott", "Core2",         "Penryn",    "Dunnington", "Nehalem",
                                     "Katmai",   "Coppermine",    "Northwood", "Banias",     "Atom",
                                     "Opteron",  "Opteron(SSE3)", "Barcelona", "Unknown"};
    if (std::find(std::begin(fallbacks), std::end(fallbacks), detected) == std::end(fallbacks)) return;
    __builtin_cpu_init();
    const char *core = nullptr;
    if (__builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw") && __builtin_cpu_supports("avx512vl") &&
        __builtin_cpu_supports("avx512dq")) {
        core = __builtin_cpu_supports("avx512bf16") ? "Cooperlake" : "SkylakeX";
    } else if (__builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma")) {
        core = "Haswell";
    }
    if (core == nullptr) return;
    std::fprintf(stderr,
                 "attngen-bench: OpenBLAS detected core %s on a CPU with %s's features; running again with "
                 "OPENBLAS_CORETYPE=%s\n",
                 detected.c_str(), core, core);
    setenv("OPENBLAS_CORETYPE", core, 1);
    execv("/proc/self/exe", argv);
#else
    (void)argv;
#endif
}

// The CPU (tools/tune/cpu_info.h), so that results name the machine they ran on.
std::string cpu_identity() {
    const attngen::tune::CpuInfo cpu = attngen::tune::read_cpu_info();
    if (cpu.model_name.empty() && cpu.vendor.empty()) return "unknown";
    return cpu.model_name + " (" + cpu.vendor + ", family " + cpu.family + ", model " + cpu.model + ")";
}

bool has_arg(int argc, char **argv, const char *prefix) {
    for (int i = 1; i < argc; i++)
        if (std::strncmp(argv[i], prefix, std::strlen(prefix)) == 0) return true;
    return false;
}

}  // namespace
}  // namespace attngen_bench

int main(int argc, char **argv) {
    using namespace attngen_bench;
    use_openblas_core_for_cpu(argv);
    const long probe_reps = take_flag(&argc, argv, "probe_reps", 5);
    // The read probe's buffer: 512 MiB, or 4x the last-level cache where that is larger (a 260 MiB L3).
    const long probe_mib =
        take_flag(&argc, argv, "probe_mib", std::max<long>(512, long(4 * (last_level_cache_bytes() >> 20))));
    const long ftz = take_flag(&argc, argv, "ftz", 0);
    if (ftz != 0) {
#if defined(__SSE__)
        _mm_setcsr(_mm_getcsr() | 0x8040);  // FTZ (bit 15) | DAZ (bit 6)
        benchmark::AddCustomContext("ftz_daz", "on");
#else
        std::fprintf(stderr, "attngen-bench: --attngen_ftz is only supported on x86\n");
        return 1;
#endif
    }
    const bool listing = has_arg(argc, argv, "--benchmark_list_tests");
    benchmark::Initialize(&argc, argv);
    if (benchmark::ReportUnrecognizedArguments(argc, argv)) return 1;
    if (probe_reps < 1 || probe_mib < 1) {
        std::fprintf(stderr, "attngen-bench: --attngen_probe_reps and --attngen_probe_mib must be >= 1\n");
        return 1;
    }

    if (!listing) {
        const ProbeResults &probe = run_probes(int(probe_reps), std::size_t(probe_mib));
        benchmark::AddCustomContext("probe_sgemm_1024_2threads_gflops", std::to_string(probe.sgemm_1024_gflops));
        benchmark::AddCustomContext("probe_sgemm_2048_2threads_gflops", std::to_string(probe.sgemm_2048_gflops));
        benchmark::AddCustomContext("probe_sgemm_peak_gflops", std::to_string(probe.sgemm_peak_gflops()));
        benchmark::AddCustomContext("probe_read_2threads_gbs", std::to_string(probe.read_gbs));
        benchmark::AddCustomContext("probe_fma_peak_2threads_gflops", std::to_string(probe.fma_gflops));
        benchmark::AddCustomContext("probe_dpbf16ps_peak_2threads_gflops", std::to_string(probe.dpbf16ps_gflops));
        benchmark::AddCustomContext("probe_read_mib", std::to_string(probe.read_mib));
        benchmark::AddCustomContext("openblas_config", openblas_get_config());
        benchmark::AddCustomContext("openblas_core", openblas_get_corename());
        benchmark::AddCustomContext("last_level_cache_mib", std::to_string(last_level_cache_bytes() >> 20));
        benchmark::AddCustomContext("cpu", cpu_identity());
    }
    openblas_set_num_threads(1);  // the baselines parallelize over heads themselves
    register_benchmarks(std::size_t(probe_mib));
    benchmark::RunSpecifiedBenchmarks();
    benchmark::Shutdown();
    return 0;
}
