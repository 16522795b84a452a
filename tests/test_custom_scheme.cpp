// The README's user-defined scheme (examples/custom_scheme/kerple.cpp), built by default through
// ATTNGEN_EXTRA_SCHEME_SOURCES and called by name with its named inputs.
#include "test_support.h"

#include <cmath>
#include <cstring>
#include <string>
#include <vector>

using namespace attngen;
using namespace attngen::test;

namespace {

// KERPLE log bias over the plain-attention reference semantics, written out for this test.
std::vector<double> kerple_reference(const AttnCase &c, const std::vector<float> &r1, const std::vector<float> &r2) {
    std::vector<double> out(c.q_size(), 0.0);
    const int group = c.heads / c.kv_heads;
    const double scale = 1.0 / std::sqrt(double(c.head_dim));
    for (int b = 0; b < c.batch; b++) {
        for (int h = 0; h < c.heads; h++) {
            const int g = h / group;
            for (int i = 0; i < c.q_len; i++) {
                const int position = c.k_len - c.q_len + i;
                std::vector<double> p(c.k_len, 0.0);
                double row_max = -1e300;
                for (int j = 0; j < c.k_len; j++) {
                    if (c.mask == ATTNGEN_MASK_CAUSAL && j > position) continue;
                    double dot = 0;
                    for (int d = 0; d < c.head_dim; d++) {
                        dot += double(c.q[((size_t(b) * c.heads + h) * c.q_len + i) * c.head_dim + d]) *
                               c.k[((size_t(b) * c.kv_heads + g) * c.k_len + j) * c.head_dim + d];
                    }
                    p[j] = dot * scale - r1[h] * std::log(1.0 + r2[h] * std::abs(position - j));
                    row_max = std::max(row_max, p[j]);
                }
                double sum = 0;
                for (int j = 0; j < c.k_len; j++) {
                    if (c.mask == ATTNGEN_MASK_CAUSAL && j > position) continue;
                    sum += p[j] = std::exp(p[j] - row_max);
                }
                for (int j = 0; j < c.k_len; j++) {
                    if (c.mask == ATTNGEN_MASK_CAUSAL && j > position) continue;
                    for (int d = 0; d < c.head_dim; d++) {
                        out[((size_t(b) * c.heads + h) * c.q_len + i) * c.head_dim + d] +=
                            p[j] / sum * c.v[((size_t(b) * c.kv_heads + g) * c.k_len + j) * c.head_dim + d];
                    }
                }
            }
        }
    }
    return out;
}

}  // namespace

TEST_CASE("custom scheme: kerple matches its formula through the named-input API", "[custom][kerple]") {
    for (const attngen_mask mask : {ATTNGEN_MASK_NONE, ATTNGEN_MASK_CAUSAL}) {
        for (const int q_len : {1, 9, 40}) {
            for (const int head_dim : {64, 24}) {
                AttnCase c = make_case(2, 4, 2, q_len, 40, head_dim, 900 + q_len + head_dim);
                c.mask = mask;
                std::vector<float> r1 = random_floats(4, 901, 0.1f, 2.f), r2 = random_floats(4, 902, 0.1f, 1.f);
                NamedInputs inputs;
                inputs.tensors["kerple_r1"] = tensor(r1.data(), {4});
                inputs.tensors["kerple_r2"] = tensor(r2.data(), {4});
                std::vector<float> out(c.q_size(), std::nanf(""));
                AttentionDesc controls = attention_desc(ATTNGEN_SCHEME_SDPA, mask);
                RunInfo info{};
                Status status = attention("kerple", "", q_tensor(c), k_tensor(c), v_tensor(c), out_tensor(c, out),
                                          controls, inputs, &info);
                INFO(c.describe() << " status " << status.message);
                REQUIRE(status.ok());
                // The automatic device: the CPU here, CUDA where a GPU and CUDA kernels are present.
                // The generic kernel, or the fast path for head_dim 64 where the build has one.
                const std::string family = std::string("attngen_kerple_") + (q_len == 1 ? "decode" : "prefill") +
                                           (cuda_runs_here() ? "_cuda" : "_cpu");
                CHECK((info.kernel == family || (head_dim == 64 && info.kernel == family + "_d64")));
                CHECK_CLOSE(out, kerple_reference(c, r1, r2), kAtol, kRtol);
            }
        }
    }
}

TEST_CASE("custom scheme: missing, misshapen and unknown inputs are clear errors", "[custom][kerple][validation]") {
    AttnCase c = make_case(1, 2, 2, 5, 7, 16, 910);
    std::vector<float> r1(2, 1.f), out(c.q_size(), 0.f);
    NamedInputs inputs;
    inputs.tensors["kerple_r1"] = tensor(r1.data(), {2});
    const AttentionDesc controls = attention_desc();
    Status status =
        attention("kerple", "", q_tensor(c), k_tensor(c), v_tensor(c), out_tensor(c, out), controls, inputs);
    CHECK(status.code == ATTNGEN_ERROR_INVALID_ARGUMENT);
    CHECK(status.message.find("kerple_r2") != std::string::npos);

    inputs.tensors["kerple_r2"] = tensor(r1.data(), {1, 2});  // rank 2 where the kernel takes rank 1
    status = attention("kerple", "", q_tensor(c), k_tensor(c), v_tensor(c), out_tensor(c, out), controls, inputs);
    CHECK(status.code == ATTNGEN_ERROR_INVALID_ARGUMENT);
    CHECK(status.message.find("kerple_r2") != std::string::npos);
    CHECK(status.message.find("rank") != std::string::npos);

    status =
        attention("no_such_scheme", "", q_tensor(c), k_tensor(c), v_tensor(c), out_tensor(c, out), controls, inputs);
    CHECK(status.code == ATTNGEN_ERROR_UNSUPPORTED);
    CHECK(status.message.find("no_such_scheme") != std::string::npos);
    CHECK(out == std::vector<float>(c.q_size(), 0.f));
}
