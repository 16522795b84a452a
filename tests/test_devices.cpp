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
        FAIL("no OpenCL platform/device found: install pocl-opencl-icd (the PoCL CPU OpenCL driver) so that the "
             "OpenCL kernels can be checked against the CPU kernels");
    }
    if (!build_has_device("opencl")) {
        WARN("this build has no OpenCL kernels (configured with ATTNGEN_OPENCL=OFF): OpenCL checks not run");
        return false;
    }
    return true;
}

// Runs a case on the CPU and on OpenCL and compares them (and the OpenCL result with the reference).
void check_opencl_matches_cpu(AttnCase c) {
    if (!require_opencl()) return;
    INFO(c.describe());
    std::vector<float> cpu, cl;
    RunInfo cpu_info{}, cl_info{};
    c.device = ATTNGEN_DEVICE_CPU;
    const Status s_cpu = run_attngen(c, cpu, &cpu_info);
    INFO("cpu: " << s_cpu.message);
    REQUIRE(s_cpu.ok());
    CHECK(std::string(cpu_info.device) == "cpu");
    c.device = ATTNGEN_DEVICE_OPENCL;
    const Status s_cl = run_attngen(c, cl, &cl_info);
    INFO("opencl: " << s_cl.message);
    REQUIRE(s_cl.ok());
    CHECK(std::string(cl_info.device) == "opencl");
    const std::string kernel = cl_info.kernel;
    INFO("opencl kernel " << kernel);
    CHECK(kernel.size() > 7);
    CHECK(kernel.substr(kernel.size() - 7) == "_opencl");
    CHECK(kernel.find(c.q_len == 1 ? "_decode_" : "_prefill_") != std::string::npos);
    CHECK_CLOSE(cl, cpu, kDeviceAtol, kDeviceRtol);
    CHECK_CLOSE(cl, reference_output(c), kAtol, kRtol);
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
    // PoCL is a CPU OpenCL device, not a GPU, and there is no CUDA device: auto picks the CPU kernels.
    REQUIRE_FALSE(attngen_device_available(ATTNGEN_DEVICE_CUDA));
    for (int Lq : {1, 6}) {
        AttnCase c = small(1, 2, 2, Lq, 6, 16, 600 + Lq, ATTNGEN_MASK_CAUSAL);
        c.device = ATTNGEN_DEVICE_AUTO;
        std::vector<float> out;
        RunInfo info{};
        const Status status = run_attngen(c, out, &info);
        INFO(status.message);
        REQUIRE(status.ok());
        CHECK(std::string(info.device) == "cpu");
        CHECK(std::string(info.kernel) == (Lq == 1 ? "attngen_sdpa_decode_cpu" : "attngen_sdpa_prefill_cpu"));
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
}

TEST_CASE("devices: OpenCL matches CPU, t5", "[devices][opencl][t5]") {
    AttnCase a = small(1, 2, 2, 12, 12, 16, 630, ATTNGEN_MASK_NONE);
    set_t5(a, 32, 128, true);
    check_opencl_matches_cpu(a);
    AttnCase b = small(2, 4, 2, 1, 20, 64, 631, ATTNGEN_MASK_CAUSAL);
    set_t5(b, 32, 128, false);
    for (float &x : b.q) x *= 0.2f;
    b.kv_lengths = {20, 7};
    check_opencl_matches_cpu(b);
    AttnCase c = small(1, 2, 1, 6, 6, 10, 632, ATTNGEN_MASK_CAUSAL);
    set_t5(c, 8, 20, false);
    check_opencl_matches_cpu(c);
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
}
