// The OpenCL kernels (run on the CPU through PoCL in CI) against the CPU kernels, every scheme,
// prefill and decode; and automatic device selection.
#include "test_support.h"

#include <string>
#include <vector>

using namespace attngen;
using namespace attngen::test;

namespace {

constexpr double kDeviceAtol = 1e-5, kDeviceRtol = 1e-4;

// OpenCL must be usable here: CI installs PoCL, so a missing device is a failure, not a skip.
bool require_opencl() {
    if (!attngen_device_available(ATTNGEN_DEVICE_OPENCL)) {
        FAIL(
            "no OpenCL platform/device found: install pocl-opencl-icd (the PoCL CPU OpenCL driver) so that the "
            "OpenCL kernels can be checked against the CPU kernels");
    }
    if (!build_has_device("opencl")) {
        WARN("this build has no OpenCL kernels (configured with ATTNGEN_OPENCL=OFF): OpenCL checks not run");
        return false;
    }
    return true;
}

// Runs a case on the CPU and on a device and compares them (and the device result with the reference).
void check_device_matches_cpu(AttnCase c, attngen_device device) {
    const std::string name = device == ATTNGEN_DEVICE_CUDA ? "cuda" : "opencl";
    INFO(c.describe());
    std::vector<float> cpu, dev;
    RunInfo cpu_info{}, dev_info{};
    c.device = ATTNGEN_DEVICE_CPU;
    const Status s_cpu = run_attngen(c, cpu, &cpu_info);
    INFO("cpu: " << s_cpu.message);
    REQUIRE(s_cpu.ok());
    CHECK(std::string(cpu_info.device) == "cpu");
    c.device = device;
    const Status s_dev = run_attngen(c, dev, &dev_info);
    INFO(name << ": " << s_dev.message);
    REQUIRE(s_dev.ok());
    CHECK(std::string(dev_info.device) == name);
    // The device's generic kernel, or its fast path for this head_dim: <family>_<device>[_d<D>].
    std::string kernel = dev_info.kernel;
    INFO(name << " kernel " << kernel);
    const std::string fixed_suffix = "_d" + std::to_string(c.head_dim);
    if (kernel.size() > fixed_suffix.size() &&
        kernel.compare(kernel.size() - fixed_suffix.size(), fixed_suffix.size(), fixed_suffix) == 0) {
        kernel.resize(kernel.size() - fixed_suffix.size());
    }
    CHECK(kernel.size() > name.size() + 1);
    CHECK(kernel.substr(kernel.size() - name.size() - 1) == "_" + name);
    CHECK(kernel.find(c.q_len == 1 ? "_decode_" : "_prefill_") != std::string::npos);
    CHECK_CLOSE(dev, cpu, kDeviceAtol, kDeviceRtol);
    CHECK_CLOSE(dev, reference_output(c), kAtol, kRtol);
}

void check_opencl_matches_cpu(const AttnCase &c) {
    if (!require_opencl()) return;
    check_device_matches_cpu(c, ATTNGEN_DEVICE_OPENCL);
}

// A few random small problems of a scheme on both devices (shapes, masks, padding, parameters).
void check_random_cases(attngen_scheme scheme, uint64_t first_seed, const std::vector<int> &head_dims) {
    for (uint64_t seed = first_seed; seed < first_seed + 4; seed++) {
        AttnCase c = random_case(seed, head_dims);
        set_random_scheme(c, scheme, seed);
        check_opencl_matches_cpu(c);
    }
}

AttnCase small(int B, int H, int Hkv, int Lq, int Lk, int D, uint64_t seed, attngen_mask mask) {
    AttnCase c = make_case(B, H, Hkv, Lq, Lk, D, seed);
    c.mask = mask;
    return c;
}

}  // namespace

TEST_CASE("devices: OpenCL is available (PoCL)", "[devices][opencl]") {
    REQUIRE(require_opencl());
    INFO(attngen_kernel_list());
    CHECK(std::string(attngen_kernel_list()).find("attngen_sdpa_prefill_opencl") != std::string::npos);
}

TEST_CASE("devices: automatic device selection resolves to the CPU here", "[devices]") {
    // PoCL is a CPU OpenCL device, not a GPU, and there is no CUDA device here: auto picks the CPU
    // kernels. (Where a CUDA GPU and CUDA kernels are present, auto picks CUDA.)
    const std::string expected_device = cuda_runs_here() ? "cuda" : "cpu";
    for (int Lq : {1, 6}) {
        AttnCase c = small(1, 2, 2, Lq, 6, 16, 600 + Lq, ATTNGEN_MASK_CAUSAL);
        c.device = ATTNGEN_DEVICE_AUTO;
        std::vector<float> out;
        RunInfo info{};
        const Status status = run_attngen(c, out, &info);
        INFO(status.message);
        REQUIRE(status.ok());
        CHECK(std::string(info.device) == expected_device);
        CHECK(std::string(info.kernel) ==
              std::string(Lq == 1 ? "attngen_sdpa_decode_" : "attngen_sdpa_prefill_") + expected_device);
        CHECK_CLOSE(out, reference_output(c), kAtol, kRtol);
    }
}

TEST_CASE("devices: OpenCL matches CPU, sdpa", "[devices][opencl][sdpa]") {
    AttnCase a = small(1, 4, 2, 9, 9, 16, 610, ATTNGEN_MASK_CAUSAL);
    check_opencl_matches_cpu(a);
    AttnCase b = small(2, 2, 1, 1, 17, 64, 611, ATTNGEN_MASK_CAUSAL);
    b.kv_lengths = {17, 5};
    check_opencl_matches_cpu(b);
    AttnCase c = small(1, 2, 2, 5, 7, 128, 612, ATTNGEN_MASK_NONE);
    check_opencl_matches_cpu(c);
    AttnCase d = small(2, 2, 2, 3, 11, 24, 613, ATTNGEN_MASK_SLIDING_WINDOW);
    d.window = 4;
    d.kv_lengths = {9, 0};
    check_opencl_matches_cpu(d);
    check_random_cases(ATTNGEN_SCHEME_SDPA, 9000, {3, 16, 64});
}

TEST_CASE("devices: OpenCL matches CPU, alibi", "[devices][opencl][alibi]") {
    AttnCase a = small(1, 4, 2, 9, 9, 16, 620, ATTNGEN_MASK_CAUSAL);
    set_alibi(a);
    check_opencl_matches_cpu(a);
    AttnCase b = small(2, 6, 6, 1, 13, 64, 621, ATTNGEN_MASK_NONE);
    set_alibi(b, true, true);
    check_opencl_matches_cpu(b);
    AttnCase c = small(1, 2, 2, 4, 4, 128, 622, ATTNGEN_MASK_CAUSAL);
    set_alibi(c);
    check_opencl_matches_cpu(c);
    check_random_cases(ATTNGEN_SCHEME_ALIBI, 9100, {5, 16, 64});
}

TEST_CASE("devices: OpenCL matches CPU, t5", "[devices][opencl][t5]") {
    AttnCase a = small(1, 2, 2, 12, 12, 16, 630, ATTNGEN_MASK_NONE);
    set_t5(a, 32, 128, true);
    check_opencl_matches_cpu(a);
    AttnCase b = small(2, 4, 2, 1, 20, 64, 631, ATTNGEN_MASK_CAUSAL);
    set_t5(b, 32, 128, false);
    for (float &x : b.q)
        x *= 0.2f;
    b.kv_lengths = {20, 7};
    check_opencl_matches_cpu(b);
    AttnCase c = small(1, 2, 1, 6, 6, 10, 632, ATTNGEN_MASK_CAUSAL);
    set_t5(c, 8, 20, false);
    check_opencl_matches_cpu(c);
    check_random_cases(ATTNGEN_SCHEME_T5, 9200, {5, 16, 64});
}

TEST_CASE("devices: OpenCL matches CPU, shaw", "[devices][opencl][shaw]") {
    AttnCase a = small(1, 2, 2, 7, 7, 8, 640, ATTNGEN_MASK_NONE);
    set_shaw(a, 2, true);
    check_opencl_matches_cpu(a);
    AttnCase b = small(2, 4, 2, 1, 17, 64, 641, ATTNGEN_MASK_CAUSAL);
    set_shaw(b, 4, true);
    check_opencl_matches_cpu(b);
    AttnCase c = small(1, 2, 2, 5, 5, 128, 642, ATTNGEN_MASK_CAUSAL);
    set_shaw(c, 3, false);
    check_opencl_matches_cpu(c);
    check_random_cases(ATTNGEN_SCHEME_SHAW, 9300, {5, 16, 64});
}

// Several query tiles and key chunks with a small clip: most (tile, chunk) blocks lie wholly in a tail
// of the clipped distance (one end row of aV), some meet the band (the value term by band).
TEST_CASE("devices: OpenCL matches CPU, shaw over long sequences with a small clip", "[devices][opencl][shaw]") {
    AttnCase both_tails = small(1, 2, 2, 90, 150, 16, 643, ATTNGEN_MASK_NONE);
    set_shaw(both_tails, 3, true);
    check_opencl_matches_cpu(both_tails);
    AttnCase bottom_right = small(1, 2, 1, 70, 130, 64, 644, ATTNGEN_MASK_CAUSAL);
    set_shaw(bottom_right, 5, true);
    check_opencl_matches_cpu(bottom_right);
    AttnCase window = small(2, 2, 2, 100, 100, 16, 645, ATTNGEN_MASK_SLIDING_WINDOW);
    window.window = 20;
    window.kv_lengths = {100, 61};
    set_shaw(window, 2, true);
    check_opencl_matches_cpu(window);
    AttnCase decode = small(2, 2, 1, 1, 300, 64, 646, ATTNGEN_MASK_CAUSAL);
    decode.kv_lengths = {300, 170};
    set_shaw(decode, 4, true);
    check_opencl_matches_cpu(decode);
}

TEST_CASE("devices: OpenCL matches CPU, txl", "[devices][opencl][txl]") {
    AttnCase a = small(1, 2, 2, 5, 9, 16, 650, ATTNGEN_MASK_CAUSAL);
    set_txl(a);
    check_opencl_matches_cpu(a);
    AttnCase b = small(2, 2, 1, 1, 12, 64, 651, ATTNGEN_MASK_CAUSAL);
    set_txl(b);
    check_opencl_matches_cpu(b);
    AttnCase c = small(1, 2, 2, 4, 4, 128, 652, ATTNGEN_MASK_CAUSAL);
    set_txl(c);
    check_opencl_matches_cpu(c);
    check_random_cases(ATTNGEN_SCHEME_TXL, 9400, {5, 16, 64});
}

TEST_CASE("devices: OpenCL matches CPU, deberta", "[devices][opencl][deberta]") {
    AttnCase a = small(1, 2, 2, 9, 9, 16, 660, ATTNGEN_MASK_NONE);
    set_deberta(a, 4, 4, 16);
    check_opencl_matches_cpu(a);
    AttnCase b = small(2, 2, 1, 1, 14, 64, 661, ATTNGEN_MASK_CAUSAL);
    set_deberta(b, 8);
    check_opencl_matches_cpu(b);
    AttnCase c = small(1, 2, 2, 4, 4, 128, 662, ATTNGEN_MASK_NONE);
    set_deberta(c, 2);
    check_opencl_matches_cpu(c);
    check_random_cases(ATTNGEN_SCHEME_DEBERTA, 9500, {5, 16, 64});
}

TEST_CASE("devices: OpenCL matches CPU, rope half", "[devices][opencl][rope]") {
    AttnCase a = small(1, 4, 2, 9, 9, 16, 670, ATTNGEN_MASK_CAUSAL);
    set_rope(a, ATTNGEN_ROPE_HALF);
    check_opencl_matches_cpu(a);
    AttnCase b = small(2, 2, 1, 1, 17, 64, 671, ATTNGEN_MASK_CAUSAL);
    set_rope(b, ATTNGEN_ROPE_HALF, 32, 500000.0);
    b.kv_lengths = {17, 9};
    check_opencl_matches_cpu(b);
    AttnCase c = small(1, 2, 2, 4, 4, 128, 672, ATTNGEN_MASK_CAUSAL);
    set_rope(c, ATTNGEN_ROPE_HALF);
    c.rope.scaling = ATTNGEN_ROPE_SCALING_LINEAR;
    c.rope.factor = 2;
    check_opencl_matches_cpu(c);
    check_random_cases(ATTNGEN_SCHEME_ROPE, 9600, {6, 17, 64});
}

TEST_CASE("devices: OpenCL matches CPU, rope interleaved", "[devices][opencl][rope]") {
    AttnCase a = small(1, 2, 2, 7, 7, 20, 680, ATTNGEN_MASK_CAUSAL);
    set_rope(a, ATTNGEN_ROPE_INTERLEAVED, 8);
    check_opencl_matches_cpu(a);
    AttnCase b = small(1, 4, 4, 1, 17, 64, 681, ATTNGEN_MASK_CAUSAL);
    set_rope(b, ATTNGEN_ROPE_INTERLEAVED);
    check_opencl_matches_cpu(b);
}

TEST_CASE("devices: OpenCL matches CPU, xpos", "[devices][opencl][xpos]") {
    AttnCase a = small(1, 2, 2, 9, 9, 16, 690, ATTNGEN_MASK_CAUSAL);
    set_xpos(a);
    check_opencl_matches_cpu(a);
    AttnCase b = small(2, 4, 2, 1, 17, 64, 691, ATTNGEN_MASK_CAUSAL);
    set_xpos(b);
    check_opencl_matches_cpu(b);
    AttnCase c = small(1, 2, 2, 4, 4, 128, 692, ATTNGEN_MASK_CAUSAL);
    set_xpos(c, 64);
    check_opencl_matches_cpu(c);
    check_random_cases(ATTNGEN_SCHEME_XPOS, 9700, {8, 16, 64});
}

// Benchmark-sized problems of every scheme on a device: dozens of key chunks per row, D = 128, and a
// DeBERTa span as in DeBERTa-v3 (256). Small random cases missed two launch failures: thread counts
// that grew with Lk, and shared memory beyond a CUDA block's 48 KB (64-key decode chunks of D = 128;
// DeBERTa's per-row 2 x span products).
static void check_long_cases(attngen_device device) {
    uint64_t seed = 9700;
    for (attngen_scheme scheme : kBuiltInSchemes) {
        AttnCase prefill = small(1, 2, 1, 70, 600, 128, seed, ATTNGEN_MASK_CAUSAL);
        set_random_scheme(prefill, scheme, seed++);
        if (scheme == ATTNGEN_SCHEME_DEBERTA) set_deberta(prefill, 256, 0, 0, seed);
        check_device_matches_cpu(prefill, device);
        AttnCase decode = small(1, 4, 2, 1, 4096, 128, seed, ATTNGEN_MASK_NONE);
        set_random_scheme(decode, scheme, seed++);
        check_device_matches_cpu(decode, device);
    }
}

TEST_CASE("devices: OpenCL at benchmark-sized key ranges, every scheme", "[devices][opencl][long]") {
    if (require_opencl()) check_long_cases(ATTNGEN_DEVICE_OPENCL);
}

TEST_CASE("devices: OpenCL with strided views (packed innermost stride, transposed heads)",
          "[devices][opencl][strided]") {
    if (!require_opencl()) return;
    const int B = 1, H = 2, Lq = 5, Lk = 9, D = 16;
    AttnCase c = small(B, H, H, Lq, Lk, D, 699, ATTNGEN_MASK_CAUSAL);
    c.device = ATTNGEN_DEVICE_OPENCL;
    const int64_t qs[4] = {B, H, Lq, D}, ks[4] = {B, H, Lk, D};
    const int64_t q_str[4] = {int64_t(Lq) * H * D, D, int64_t(H) * D, 1};              // [B, L, H, D] storage
    const int64_t k_str[4] = {int64_t(Lk) * H * D * 2, D * 2, int64_t(H) * D * 2, 2};  // and every other float
    const int64_t o_str[4] = {int64_t(H) * Lq * D * 3, int64_t(Lq) * D * 3, D * 3, 3};
    const float sentinel = 99.f;
    std::vector<float> qbuf(std::size_t(B) * q_str[0]), kbuf(std::size_t(B) * k_str[0], sentinel),
        vbuf(std::size_t(B) * k_str[0], sentinel), obuf(std::size_t(B) * o_str[0], sentinel);
    scatter4(c.q, qs, q_str, qbuf);
    scatter4(c.k, ks, k_str, kbuf);
    scatter4(c.v, ks, k_str, vbuf);
    const Tensor q = strided(qbuf.data(), {B, H, Lq, D}, {q_str[0], q_str[1], q_str[2], q_str[3]});
    const Tensor k = strided(kbuf.data(), {B, H, Lk, D}, {k_str[0], k_str[1], k_str[2], k_str[3]});
    const Tensor v = strided(vbuf.data(), {B, H, Lk, D}, {k_str[0], k_str[1], k_str[2], k_str[3]});
    const Tensor out = strided(obuf.data(), {B, H, Lq, D}, {o_str[0], o_str[1], o_str[2], o_str[3]});
    RunInfo info{};
    const Status status = run_views(c, q, k, v, out, &info);
    INFO(status.message);
    REQUIRE(status.ok());
    CHECK(std::string(info.device) == "opencl");
    CHECK_CLOSE(gather4(obuf, qs, o_str), reference_output(c), kAtol, kRtol);
    std::size_t gaps_written = 0;
    for (std::size_t n = 0; n < obuf.size(); n++)
        gaps_written += (n % 3 != 0 && obuf[n] != sentinel);
    CHECK(gaps_written == 0);
}

TEST_CASE("devices: CUDA matches CPU where a GPU is present", "[devices][cuda]") {
    // CI machines have no GPU: there the unavailable-device error is checked in test_validation.cpp.
    if (!cuda_runs_here()) {
        WARN("no CUDA kernels in this build or no CUDA device: CUDA-vs-CPU comparison not run");
        return;
    }
    for (attngen_scheme scheme : kBuiltInSchemes) {
        for (uint64_t seed = 0; seed < 6; seed++) {
            AttnCase c = random_case(9900 + 10 * uint64_t(scheme) + seed, {8, 16, 64, 128});
            set_random_scheme(c, scheme, seed);
            check_device_matches_cpu(c, ATTNGEN_DEVICE_CUDA);
        }
    }
    check_long_cases(ATTNGEN_DEVICE_CUDA);
}
