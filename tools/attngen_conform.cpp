// attngen-conform DIR: runs attngen on every golden case (*.json) under DIR, in the format and with
// the semantics of the conformance contract, and checks every output attngen produces for the case.
// One line per case, then "N passed, M failed". Exit status 1 when any case fails, including a case
// of a scheme or kind this runner does not understand (never skipped silently).
#include "attngen/attngen.hpp"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <functional>
#include <iostream>
#include <map>
#include <optional>
#include <regex>
#include <sstream>
#include <string>
#include <vector>

namespace fs = std::filesystem;
using json = nlohmann::json;

namespace {

struct CaseTensor {
    std::string dtype;
    std::vector<int64_t> shape;
    std::vector<double> data;
    int64_t size() const { return int64_t(data.size()); }
};

struct GoldenCase {
    std::string scheme, name;
    json meta;
    std::map<std::string, CaseTensor> tensors;

    bool has(const std::string &tensor) const { return tensors.count(tensor) > 0; }
    const CaseTensor &at(const std::string &tensor) const {
        auto found = tensors.find(tensor);
        if (found == tensors.end()) throw std::runtime_error("case has no tensor '" + tensor + "'");
        return found->second;
    }
    const json &params() const {
        static const json empty = json::object();
        return meta.contains("params") && meta["params"].is_object() ? meta["params"] : empty;
    }
};

// A failed run or check: the case fails with this message.
struct CaseFailure {
    std::string message;
};

[[noreturn]] void case_fail(const std::string &message) {
    throw CaseFailure{message};
}

// Outcome of one case: what was checked, the worst error of each check.
struct Report {
    std::vector<std::string> checks;
    std::vector<std::string> notes;
    bool failed = false;
};

std::string format_error(double error) {
    char text[32];
    std::snprintf(text, sizeof text, "%.2g", error);
    return text;
}

// ---------------------------------------------------------------------------------------------
// Parameters: meta.params by any of several names (searched in nested objects too), else the case
// name, else a default.

const json *find_key(const json &node, const std::vector<std::string> &keys) {
    if (!node.is_object()) return nullptr;
    for (const std::string &key : keys) {
        auto found = node.find(key);
        if (found != node.end() && !found->is_null()) return &*found;
    }
    for (const auto &item : node.items()) {
        if (const json *nested = find_key(item.value(), keys)) return nested;
    }
    return nullptr;
}

std::optional<double> number_param(const GoldenCase &c, const std::vector<std::string> &keys) {
    const json *value = find_key(c.params(), keys);
    if (!value) return std::nullopt;
    if (value->is_number()) return value->get<double>();
    if (value->is_boolean()) return value->get<bool>() ? 1.0 : 0.0;
    if (value->is_string()) {
        try {
            return std::stod(value->get<std::string>());
        } catch (...) {
            return std::nullopt;
        }
    }
    return std::nullopt;
}

std::optional<std::string> string_param(const GoldenCase &c, const std::vector<std::string> &keys) {
    const json *value = find_key(c.params(), keys);
    if (value && value->is_string()) return value->get<std::string>();
    return std::nullopt;
}

std::optional<double> from_name(const GoldenCase &c, const std::string &pattern) {
    std::smatch match;
    if (std::regex_search(c.name, match, std::regex(pattern))) return std::stod(match[1].str());
    return std::nullopt;
}

bool name_has(const GoldenCase &c, const std::string &word) {
    return c.name.find(word) != std::string::npos;
}

// ---------------------------------------------------------------------------------------------
// Tensors and checks.

CaseTensor read_tensor(const json &node) {
    CaseTensor t;
    t.dtype = node.at("dtype").get<std::string>();
    t.shape = node.at("shape").get<std::vector<int64_t>>();
    const json &data = node.at("data");
    t.data.reserve(data.size());
    for (const json &value : data)
        t.data.push_back(value.get<double>());
    return t;
}

std::vector<float> as_f32(const CaseTensor &t) {
    return std::vector<float>(t.data.begin(), t.data.end());
}

double tolerance_from_note(const GoldenCase &c, double fallback) {
    if (!c.meta.contains("tolerance_note")) return fallback;
    const std::string note = c.meta["tolerance_note"].dump();
    std::smatch match;
    if (std::regex_search(note, match, std::regex(R"(atol\s*=?\s*([0-9.]+[eE]-?[0-9]+|[0-9.]+))"))) {
        return std::max(fallback, std::stod(match[1].str()));
    }
    return fallback;
}

// |got - want| <= atol + rtol |want| everywhere; records the worst absolute error.
void expect_close(Report &report, const std::string &what, const std::vector<float> &got, const CaseTensor &want,
                  double atol, double rtol) {
    if (int64_t(got.size()) != want.size()) {
        case_fail(what + ": attngen produced " + std::to_string(got.size()) + " values, reference has " +
                  std::to_string(want.size()));
    }
    double worst = 0;
    int64_t worst_index = -1;
    for (int64_t n = 0; n < want.size(); n++) {
        const double error = std::fabs(double(got[n]) - want.data[n]);
        if (!std::isfinite(got[n])) case_fail(what + ": non-finite value at " + std::to_string(n));
        if (error > worst) worst = error;
        if (error > atol + rtol * std::fabs(want.data[n]) && worst_index < 0) worst_index = n;
    }
    if (worst_index >= 0) {
        case_fail(what + ": max abs error " + format_error(worst) + " exceeds atol=rtol=" + format_error(atol) +
                  " (first at flat index " + std::to_string(worst_index) + ": got " + std::to_string(got[worst_index]) +
                  ", want " + std::to_string(want.data[worst_index]) + ")");
    }
    report.checks.push_back(what + " " + format_error(worst));
}

void expect_equal_ints(Report &report, const std::string &what, const std::vector<int32_t> &got,
                       const CaseTensor &want) {
    if (int64_t(got.size()) != want.size()) case_fail(what + ": size mismatch");
    int64_t mismatches = 0, first = -1;
    for (int64_t n = 0; n < want.size(); n++) {
        if (got[n] != int32_t(std::llround(want.data[n]))) {
            if (first < 0) first = n;
            mismatches++;
        }
    }
    if (mismatches) {
        case_fail(what + ": " + std::to_string(mismatches) + " mismatches (first at " + std::to_string(first) +
                  ": got " + std::to_string(got[first]) + ", want " + std::to_string(int64_t(want.data[first])) + ")");
    }
    report.checks.push_back(what + " exact");
}

void require_ok(const attngen::Status &status, const std::string &what) {
    if (!status.ok()) case_fail(what + " failed: " + status.message);
}

// ---------------------------------------------------------------------------------------------
// Attention cases.

struct Shape {
    int64_t batch, heads, kv_heads, q_len, k_len, head_dim;
};

Shape attention_shape(const GoldenCase &c) {
    const CaseTensor &q = c.at("q"), &k = c.at("k");
    if (q.shape.size() != 4 || k.shape.size() != 4) case_fail("q and k must be rank 4 [batch, heads, len, head_dim]");
    return {q.shape[0], q.shape[1], k.shape[1], q.shape[2], k.shape[2], q.shape[3]};
}

// The mask of a case, from mask_allowed when present (the ground truth), else from params.
void detect_mask(const GoldenCase &c, const Shape &s, attngen_attention_desc &desc, Report &report) {
    if (!c.has("mask_allowed")) {
        // Without the ground truth: the params, else the scheme's reference (decoders are causal).
        std::optional<double> causal = number_param(c, {"causal", "is_causal"});
        if (!causal)
            causal = (c.scheme == "rope" || c.scheme == "xpos" || c.scheme == "alibi" || c.scheme == "txl") ? 1 : 0;
        desc.mask = *causal != 0 ? ATTNGEN_MASK_CAUSAL : ATTNGEN_MASK_NONE;
        report.notes.push_back(std::string("no mask_allowed: ") + (*causal != 0 ? "causal" : "no mask"));
        return;
    }
    const CaseTensor &allowed = c.at("mask_allowed");
    auto value = [&](int64_t i, int64_t j) { return allowed.data[i * s.k_len + j] != 0; };
    if (allowed.size() != s.q_len * s.k_len) case_fail("mask_allowed is not [q_len, k_len]");
    bool all = true, causal = true;
    int64_t widest = 0;
    for (int64_t i = 0; i < s.q_len; i++) {
        const int64_t position = s.k_len - s.q_len + i;
        for (int64_t j = 0; j < s.k_len; j++) {
            all = all && value(i, j);
            if (value(i, j) && j > position) causal = false;
            if (value(i, j)) widest = std::max(widest, position - j + 1);
        }
    }
    if (all) {
        desc.mask = ATTNGEN_MASK_NONE;
        return;
    }
    auto matches = [&](int64_t window) {
        for (int64_t i = 0; i < s.q_len; i++) {
            const int64_t position = s.k_len - s.q_len + i;
            for (int64_t j = 0; j < s.k_len; j++) {
                const bool want = j <= position && (window <= 0 || position - j < window);
                if (want != value(i, j)) return false;
            }
        }
        return true;
    };
    if (causal && matches(0)) {
        desc.mask = ATTNGEN_MASK_CAUSAL;
        return;
    }
    if (causal && widest > 0 && matches(widest)) {
        desc.mask = ATTNGEN_MASK_SLIDING_WINDOW;
        desc.window = int32_t(widest);
        report.notes.push_back("sliding window " + std::to_string(widest));
        return;
    }
    case_fail("mask_allowed is not a pattern attngen expresses (none, bottom-right causal, sliding window)");
}

// Owns the inputs of one attention call.
struct AttentionRun {
    Shape shape{};
    std::vector<float> q, k, v, out;
    attngen_attention_desc desc{};
    std::vector<std::vector<float>> tables;
    std::vector<std::vector<int32_t>> ints;

    attngen_tensor table(const CaseTensor &t, std::vector<int64_t> shape = {}) {
        tables.push_back(as_f32(t));
        if (shape.empty()) shape = t.shape;
        return attngen::tensor(tables.back().data(), shape);
    }
    attngen_tensor int_table(std::vector<int32_t> values, std::vector<int64_t> shape) {
        ints.push_back(std::move(values));
        attngen_tensor t{};
        t.data = ints.back().data();
        t.dtype = ATTNGEN_INT32;
        t.rank = int32_t(shape.size());
        for (size_t d = 0; d < shape.size(); d++)
            t.shape[d] = shape[d];
        return t;
    }
};

AttentionRun prepare_attention(const GoldenCase &c, attngen_scheme scheme, attngen_device device, Report &report) {
    AttentionRun run;
    run.shape = attention_shape(c);
    run.q = as_f32(c.at("q"));
    run.k = as_f32(c.at("k"));
    run.v = as_f32(c.at("v"));
    run.out.assign(run.q.size(), 0.f);
    run.desc = attngen::attention_desc(scheme);
    run.desc.device = device;
    // Tables are reserved so that views into them stay valid.
    run.tables.reserve(16);
    run.ints.reserve(16);
    detect_mask(c, run.shape, run.desc, report);
    return run;
}

// Element type of the attention calls (--dtype): bf16 rounds q, k, v to bfloat16 and compares the
// bfloat16 output with the float32 reference at the bf16 tolerance: rounding q and k to 8
// significant bits perturbs a logit by up to ~|q||k| 2^-8, a few 1e-2 of output for unscaled (T5) logits.
bool g_bf16 = false;
constexpr double kBf16Tolerance = 5e-2;

std::vector<float> execute(AttentionRun &run, Report &report) {
    const Shape &s = run.shape;
    attngen_run_info info{};
    attngen::Status status;
    if (g_bf16) {
        auto to_bf16 = [](const std::vector<float> &x) {
            std::vector<uint16_t> bits(x.size());
            for (size_t n = 0; n < x.size(); n++)
                bits[n] = attngen::to_bf16(x[n]);
            return bits;
        };
        std::vector<uint16_t> q = to_bf16(run.q), k = to_bf16(run.k), v = to_bf16(run.v), out(run.out.size());
        status = attngen::attention(attngen::bf16_tensor(q.data(), {s.batch, s.heads, s.q_len, s.head_dim}),
                                    attngen::bf16_tensor(k.data(), {s.batch, s.kv_heads, s.k_len, s.head_dim}),
                                    attngen::bf16_tensor(v.data(), {s.batch, s.kv_heads, s.k_len, s.head_dim}),
                                    attngen::bf16_tensor(out.data(), {s.batch, s.heads, s.q_len, s.head_dim}), run.desc,
                                    &info);
        for (size_t n = 0; n < out.size(); n++)
            run.out[n] = attngen::from_bf16(out[n]);
    } else {
        status = attngen::attention(attngen::tensor(run.q.data(), {s.batch, s.heads, s.q_len, s.head_dim}),
                                    attngen::tensor(run.k.data(), {s.batch, s.kv_heads, s.k_len, s.head_dim}),
                                    attngen::tensor(run.v.data(), {s.batch, s.kv_heads, s.k_len, s.head_dim}),
                                    attngen::tensor(run.out.data(), {s.batch, s.heads, s.q_len, s.head_dim}), run.desc,
                                    &info);
    }
    require_ok(status, "attention");
    report.notes.push_back(std::string(info.kernel));
    return run.out;
}

// The tolerance of an attention output check: the case's (float32) or bfloat16's.
double out_tolerance(double f32_tolerance) {
    return g_bf16 ? std::max(f32_tolerance, kBf16Tolerance) : f32_tolerance;
}

// Position ids tensor [batch, len] (or [1, len] / [len], broadcast over batch).
std::vector<int32_t> position_ids(const GoldenCase &c, const std::string &name, int64_t batch, int64_t length) {
    const CaseTensor &t = c.at(name);
    if (t.size() != length && t.size() != batch * length)
        case_fail(name + " has " + std::to_string(t.size()) + " values");
    std::vector<int32_t> ids(batch * length);
    for (int64_t b = 0; b < batch; b++) {
        for (int64_t n = 0; n < length; n++)
            ids[b * length + n] = int32_t(std::llround(t.data[(t.size() == length ? 0 : b * length) + n]));
    }
    return ids;
}

// ---------------------------------------------------------------------------------------------
// Scheme handlers.

constexpr double kTolerance = 1e-4;

void run_sdpa(const GoldenCase &c, attngen_device device, Report &report) {
    AttentionRun run = prepare_attention(c, ATTNGEN_SCHEME_SDPA, device, report);
    expect_close(report, "out", execute(run, report), c.at("out"), out_tolerance(kTolerance),
                 out_tolerance(kTolerance));
}

void run_alibi(const GoldenCase &c, attngen_device device, Report &report) {
    // The slopes case: slopes_h{N}_{f64,f32,bloom_f32}.
    bool slopes_case = false;
    for (const auto &[name, tensor] : c.tensors) {
        std::smatch match;
        if (!std::regex_match(name, match, std::regex(R"(slopes_h(\d+)_(f64|f32|bloom_f32))"))) continue;
        slopes_case = true;
        const int heads = std::stoi(match[1].str());
        attngen::Status status;
        std::vector<double> slopes = attngen::alibi_slopes(heads, &status);
        require_ok(status, "alibi_slopes");
        const bool f64 = match[2].str() == "f64";
        std::vector<float> got(slopes.begin(), slopes.end());
        if (f64) {
            double worst = 0;
            for (int h = 0; h < heads; h++)
                worst = std::max(worst, std::fabs(slopes[h] - tensor.data[h]));
            if (worst > 1e-12) case_fail(name + ": max abs error " + format_error(worst));
            report.checks.push_back(name + " " + format_error(worst));
        } else {
            expect_close(report, name, got, tensor, 1e-7, 1e-6);
        }
    }
    if (slopes_case) return;

    AttentionRun run = prepare_attention(c, ATTNGEN_SCHEME_ALIBI, device, report);
    const Shape &s = run.shape;
    std::vector<double> slopes = attngen::alibi_slopes(int(s.heads));
    if (c.has("slopes_f64")) {
        double worst = 0;
        for (int64_t h = 0; h < s.heads; h++)
            worst = std::max(worst, std::fabs(slopes[h] - c.at("slopes_f64").data[h]));
        if (worst > 1e-12) case_fail("slopes_f64: max abs error " + format_error(worst));
        report.checks.push_back("slopes " + format_error(worst));
    }
    // The bias forms the references materialize, from attngen's slopes.
    if (c.has("alibi")) {  // BLOOM: [batch*heads, 1, k_len] = slope_h * j
        const CaseTensor &bias = c.at("alibi");
        std::vector<float> got;
        for (int64_t bh = 0; bh < s.batch * s.heads; bh++) {
            for (int64_t j = 0; j < s.k_len; j++)
                got.push_back(float(slopes[bh % s.heads] * double(j)));
        }
        expect_close(report, "alibi", got, bias, 1e-5, kTolerance);
    }
    if (c.has("alibi_bias_rel")) {  // [heads, q, k] = -slope_h (i - j), zero where masked
        std::vector<float> got;
        const CaseTensor &allowed = c.at("mask_allowed");
        for (int64_t h = 0; h < s.heads; h++) {
            for (int64_t i = 0; i < s.q_len; i++) {
                for (int64_t j = 0; j < s.k_len; j++) {
                    const int64_t position = s.k_len - s.q_len + i;
                    const bool visible = allowed.data[i * s.k_len + j] != 0;
                    got.push_back(visible ? float(-slopes[h] * double(position - j)) : 0.f);
                }
            }
        }
        expect_close(report, "alibi_bias_rel", got, c.at("alibi_bias_rel"), 1e-5, kTolerance);
    }
    std::vector<float> out = execute(run, report);
    expect_close(report, "out", out, c.at("out"), out_tolerance(kTolerance), out_tolerance(kTolerance));
    if (c.has("out_bloom"))
        expect_close(report, "out_bloom", out, c.at("out_bloom"), out_tolerance(kTolerance), out_tolerance(kTolerance));
}

void run_sinusoidal(const GoldenCase &c, attngen_device, Report &report) {
    attngen_sinusoid_convention convention;
    std::string tensor;
    if (name_has(c, "pt_examples") || c.has("pe")) {
        convention = ATTNGEN_SINUSOID_PAPER, tensor = "pe";
    } else if (name_has(c, "t2t") || c.has("signal")) {
        convention = ATTNGEN_SINUSOID_T2T, tensor = "signal";
    } else if (name_has(c, "txl") || c.has("pos_emb")) {
        convention = ATTNGEN_SINUSOID_TXL, tensor = "pos_emb";
    } else {
        case_fail("sinusoidal case of an unknown convention (expected pt_examples, t2t_timing_signal or txl_posemb)");
    }
    std::optional<double> length = number_param(c, {"max_len", "length", "L", "seq_len"});
    if (!length) length = from_name(c, R"(_L(\d+))");
    std::optional<double> channels = number_param(c, {"d_model", "channels", "d", "demb", "hidden_size"});
    if (!channels) channels = from_name(c, R"(_D(\d+))");
    if (!length || !channels) case_fail("cannot tell the table's length and channels");
    const double base = number_param(c, {"base", "max_timescale"}).value_or(10000.0);
    const int32_t columns = attngen_sinusoid_columns(convention, int32_t(*channels));
    std::vector<float> table(std::max<int64_t>(int64_t(*length) * std::max(columns, 1), 1));
    attngen_tensor out = attngen::tensor(table.data(), {int64_t(*length), int64_t(std::max(columns, 1))});
    char message[512];
    attngen_status status =
        attngen_sinusoid_table(convention, int32_t(*channels), 0, base, &out, message, sizeof message);
    if (c.meta.contains("reference_error")) {
        if (status == ATTNGEN_OK) case_fail("the reference rejects these parameters, attngen accepted them");
        report.notes.push_back(std::string("reference rejected; attngen rejects too: ") + message);
        return;
    }
    if (status != ATTNGEN_OK) case_fail(std::string("sinusoid_table failed: ") + message);
    expect_close(report, tensor, table, c.at(tensor), kTolerance, kTolerance);
}

void run_t5(const GoldenCase &c, attngen_device device, Report &report) {
    const int num_buckets_default = int(number_param(c, {"num_buckets", "relative_attention_num_buckets"})
                                            .value_or(from_name(c, R"(nb(\d+))").value_or(32)));
    const int max_distance = int(number_param(c, {"max_distance", "relative_attention_max_distance"})
                                     .value_or(from_name(c, R"(md(\d+))").value_or(128)));
    if (!c.has("q")) {  // the bucket-function case: one int tensor per direction
        const CaseTensor &relative = c.at("relative_position");
        bool any = false;
        for (const auto &[name, t] : c.tensors) {
            if (name == "relative_position" || t.dtype != "int64") continue;
            const bool unidirectional =
                name.find("uni") != std::string::npos || name.find("decoder") != std::string::npos;
            const bool bidirectional_name =
                name.find("bidir") != std::string::npos || name.find("encoder") != std::string::npos;
            if (!unidirectional && !bidirectional_name)
                case_fail("cannot tell the direction of bucket tensor '" + name + "'");
            const bool bidirectional = !unidirectional;
            any = true;
            std::vector<int32_t> got;
            for (double r : relative.data) {
                attngen::Status status;
                got.push_back(attngen::t5_bucket(int(std::llround(r)), bidirectional, num_buckets_default, max_distance,
                                                 &status));
                require_ok(status, "t5_bucket");
            }
            expect_equal_ints(report, name, got, t);
        }
        if (!any) case_fail("no bucket tensors in the case");
        return;
    }
    AttentionRun run = prepare_attention(c, ATTNGEN_SCHEME_T5, device, report);
    const Shape &s = run.shape;
    std::string table_name = "rel_bias_table";
    if (!c.has(table_name)) {
        for (const auto &[name, t] : c.tensors) {
            if (t.shape.size() == 2 && t.shape[1] == s.heads && name.find("bias") != std::string::npos)
                table_name = name;
        }
    }
    const CaseTensor &table = c.at(table_name);
    std::optional<double> bidirectional = number_param(c, {"bidirectional"});
    if (!bidirectional) {
        if (std::optional<double> decoder = number_param(c, {"is_decoder"})) bidirectional = *decoder == 0 ? 1 : 0;
    }
    if (!bidirectional) bidirectional = name_has(c, "decoder") ? 0 : 1;
    run.desc.t5_table = run.table(table);
    run.desc.t5_bidirectional = int32_t(*bidirectional);
    run.desc.t5_max_distance = max_distance;
    const int num_buckets = int(table.shape[0]);
    // Buckets of every (query, key), as the reference's compute_bias sees them.
    if (c.has("bucket")) {
        std::vector<int32_t> got;
        for (int64_t i = 0; i < s.q_len; i++) {
            for (int64_t j = 0; j < s.k_len; j++) {
                got.push_back(attngen::t5_bucket(int(j - (s.k_len - s.q_len + i)), *bidirectional != 0, num_buckets,
                                                 max_distance));
            }
        }
        expect_equal_ints(report, "bucket", got, c.at("bucket"));
    }
    expect_close(report, "out", execute(run, report), c.at("out"), out_tolerance(kTolerance),
                 out_tolerance(kTolerance));
}

// RoPE parameters of a case: pairing, rot_dim, base and scaling, from params or the case name.
attngen_rope_params rope_params_of(const GoldenCase &c, int64_t head_dim, Report &report) {
    attngen_rope_params rope = attngen::rope_params();
    std::string pairing = string_param(c, {"pairing", "rope_pairing"}).value_or("");
    if (pairing.empty()) pairing = (name_has(c, "gptj") || name_has(c, "interleav")) ? "interleaved" : "half";
    rope.pairing =
        pairing.find("inter") != std::string::npos || pairing == "gptj" ? ATTNGEN_ROPE_INTERLEAVED : ATTNGEN_ROPE_HALF;
    std::optional<double> rot_dim = number_param(c, {"rot_dim", "rotary_dim", "rotary_ndims"});
    if (!rot_dim) {
        if (std::optional<double> fraction = number_param(c, {"rotary_pct", "partial_rotary_factor"})) {
            rot_dim = double(int64_t(double(head_dim) * *fraction));
        }
    }
    if (!rot_dim) rot_dim = from_name(c, R"(_rot(\d+))");
    if (!rot_dim)
        rot_dim = from_name(c, R"(pct([0-9.]+))").has_value()
                      ? std::optional<double>(double(int64_t(double(head_dim) * *from_name(c, R"(pct([0-9.]+))"))))
                      : std::nullopt;
    rope.rot_dim = int32_t(rot_dim.value_or(double(head_dim)));
    std::optional<double> base = number_param(c, {"rope_theta", "theta", "base", "rotary_emb_base"});
    if (!base) {
        std::smatch match;
        if (std::regex_search(c.name, match, std::regex(R"(theta([0-9]+(?:\.[0-9]+)?e[0-9]+))")))
            base = std::stod(match[1].str());
    }
    rope.base = base.value_or(10000.0);
    std::string type = string_param(c, {"rope_type", "type", "scaling_type"}).value_or("");
    if (type.empty()) {
        if (name_has(c, "llama3"))
            type = "llama3";
        else if (name_has(c, "dynamic"))
            type = "dynamic";
        else if (name_has(c, "linear"))
            type = "linear";
        else if (name_has(c, "yarn"))
            type = "yarn";
        else
            type = "default";
    }
    if (type == "linear") {
        rope.scaling = ATTNGEN_ROPE_SCALING_LINEAR;
        rope.factor =
            number_param(c, {"factor", "scaling_factor"}).value_or(from_name(c, R"(factor([0-9.]+))").value_or(1));
    } else if (type == "dynamic" || type == "dynamic_ntk") {
        rope.scaling = ATTNGEN_ROPE_SCALING_DYNAMIC_NTK;
        rope.factor =
            number_param(c, {"factor", "scaling_factor"}).value_or(from_name(c, R"(factor([0-9.]+))").value_or(1));
        rope.max_position_embeddings =
            int32_t(number_param(c, {"max_position_embeddings"}).value_or(from_name(c, R"(mpe(\d+))").value_or(2048)));
    } else if (type == "llama3") {
        rope.scaling = ATTNGEN_ROPE_SCALING_LLAMA3;
        rope.factor = number_param(c, {"factor"}).value_or(8);
        rope.low_freq_factor = number_param(c, {"low_freq_factor"}).value_or(1);
        rope.high_freq_factor = number_param(c, {"high_freq_factor"}).value_or(4);
        rope.original_max_position_embeddings =
            int32_t(number_param(c, {"original_max_position_embeddings"}).value_or(8192));
    } else if (type == "yarn") {
        rope.scaling = ATTNGEN_ROPE_SCALING_YARN;
        rope.factor = number_param(c, {"factor"}).value_or(1);
        rope.original_max_position_embeddings =
            int32_t(number_param(c, {"original_max_position_embeddings"}).value_or(4096));
        rope.beta_fast = number_param(c, {"beta_fast"}).value_or(0);
        rope.beta_slow = number_param(c, {"beta_slow"}).value_or(0);
        rope.attention_factor = number_param(c, {"attention_factor"}).value_or(0);
    } else if (type != "default") {
        case_fail("rope scaling type '" + type + "' is not one attngen knows (default, linear, dynamic, llama3, yarn)");
    }
    report.notes.push_back(std::string(rope.pairing == ATTNGEN_ROPE_HALF ? "half" : "interleaved") + " rot_dim " +
                           std::to_string(rope.rot_dim) + " " + type);
    return rope;
}

void run_rope(const GoldenCase &c, attngen_device device, Report &report) {
    AttentionRun run = prepare_attention(c, ATTNGEN_SCHEME_ROPE, device, report);
    const Shape &s = run.shape;
    const double tolerance = tolerance_from_note(c, kTolerance);
    attngen_rope_params rope = rope_params_of(c, s.head_dim, report);
    std::vector<int32_t> q_ids, k_ids;
    for (int64_t b = 0; b < s.batch; b++) {
        for (int64_t i = 0; i < s.q_len; i++)
            q_ids.push_back(int32_t(s.k_len - s.q_len + i));
    }
    for (int64_t b = 0; b < s.batch; b++) {
        for (int64_t j = 0; j < s.k_len; j++)
            k_ids.push_back(int32_t(j));
    }
    if (c.has("position_ids_q")) q_ids = position_ids(c, "position_ids_q", s.batch, s.q_len);
    if (c.has("position_ids_k")) k_ids = position_ids(c, "position_ids_k", s.batch, s.k_len);
    int32_t max_position = 0;
    for (int32_t id : q_ids)
        max_position = std::max(max_position, id);
    for (int32_t id : k_ids)
        max_position = std::max(max_position, id);

    // inv_freq: the stored tensor is the module's buffer (linear scaling divides positions instead).
    if (c.has("inv_freq")) {
        attngen::Status status;
        std::vector<float> inv_freq = attngen::rope_inv_freq(rope, int(s.head_dim), max_position + 1, nullptr, &status);
        require_ok(status, "rope_inv_freq");
        std::vector<float> compared = inv_freq;
        if (rope.scaling == ATTNGEN_ROPE_SCALING_LINEAR) {
            for (float &f : compared)
                f = float(f * rope.factor);
        }
        try {
            expect_close(report, "inv_freq", compared, c.at("inv_freq"), 1e-7, 1e-5);
        } catch (const CaseFailure &) {
            if (rope.scaling != ATTNGEN_ROPE_SCALING_DYNAMIC_NTK) throw;
            // A dynamic-NTK module may store its frequencies before the update.
            attngen_rope_params unscaled = rope;
            unscaled.scaling = ATTNGEN_ROPE_SCALING_NONE;
            expect_close(report, "inv_freq(before update)", attngen::rope_inv_freq(unscaled, int(s.head_dim), 0),
                         c.at("inv_freq"), 1e-7, 1e-5);
        }
    }
    // Rotated q and k through the standalone kernel.
    for (const auto &[input, ids, length, heads, name] : {std::tuple{&run.q, &q_ids, s.q_len, s.heads, "q_rot"},
                                                          std::tuple{&run.k, &k_ids, s.k_len, s.kv_heads, "k_rot"}}) {
        if (!c.has(name)) continue;
        std::vector<float> rotated(input->size());
        attngen_tensor x = attngen::tensor(input->data(), {s.batch, heads, length, s.head_dim});
        attngen_tensor out = attngen::tensor(rotated.data(), {s.batch, heads, length, s.head_dim});
        attngen_tensor positions = attngen::tensor(ids->data(), {s.batch, length});
        char message[512];
        if (attngen_rope(&x, &positions, &rope, max_position + 1, &out, message, sizeof message) != ATTNGEN_OK) {
            case_fail(std::string("rope kernel failed: ") + message);
        }
        expect_close(report, name, rotated, c.at(name), tolerance, tolerance);
    }
    run.desc.rope = rope;
    run.desc.q_positions = run.int_table(q_ids, {s.batch, s.q_len});
    run.desc.k_positions = run.int_table(k_ids, {s.batch, s.k_len});
    expect_close(report, "out", execute(run, report), c.at("out"), out_tolerance(tolerance), out_tolerance(tolerance));
}

void run_xpos(const GoldenCase &c, attngen_device device, Report &report) {
    AttentionRun run = prepare_attention(c, ATTNGEN_SCHEME_XPOS, device, report);
    const Shape &s = run.shape;
    const double scale_base = number_param(c, {"scale_base"}).value_or(512);
    const int64_t offset = int64_t(number_param(c, {"offset"}).value_or(double(s.k_len - s.q_len)));
    auto floor_div2 = [](int64_t n) { return n >= 0 ? n / 2 : -((-n + 1) / 2); };
    for (const auto &[input, first, length, heads, downscale, name] :
         {std::tuple{&run.q, offset, s.q_len, s.heads, 0, "q_xpos"},
          std::tuple{&run.k, int64_t(0), s.k_len, s.kv_heads, 1, "k_xpos"}}) {
        if (!c.has(name)) continue;
        std::vector<int32_t> ids;
        for (int64_t b = 0; b < s.batch; b++) {
            for (int64_t n = 0; n < length; n++)
                ids.push_back(int32_t(first + n));
        }
        const int32_t centre = int32_t(floor_div2(-(length + first)));
        std::vector<float> rotated(input->size());
        attngen_tensor x = attngen::tensor(input->data(), {s.batch, heads, length, s.head_dim});
        attngen_tensor out = attngen::tensor(rotated.data(), {s.batch, heads, length, s.head_dim});
        attngen_tensor positions = attngen::tensor(ids.data(), {s.batch, length});
        char message[512];
        if (attngen_xpos(&x, &positions, scale_base, centre, downscale, &out, message, sizeof message) != ATTNGEN_OK) {
            case_fail(std::string("xpos kernel failed: ") + message);
        }
        expect_close(report, name, rotated, c.at(name), kTolerance, kTolerance);
    }
    run.desc.xpos_scale_base = scale_base;
    expect_close(report, "out", execute(run, report), c.at("out"), out_tolerance(kTolerance),
                 out_tolerance(kTolerance));
}

// A [2K+1, head_dim] float32 table whose name mentions one of `words` (Shaw's key / value tables).
std::optional<std::string> table_named(const GoldenCase &c, const std::vector<std::string> &words, int64_t head_dim) {
    for (const std::string &word : words) {
        for (const auto &[name, t] : c.tensors) {
            if (t.shape.size() == 2 && t.shape[1] == head_dim && t.shape[0] % 2 == 1 && t.dtype == "float32" &&
                name.find(word) != std::string::npos) {
                return name;
            }
        }
    }
    return std::nullopt;
}

void run_shaw(const GoldenCase &c, attngen_device device, Report &report) {
    AttentionRun run = prepare_attention(c, ATTNGEN_SCHEME_SHAW, device, report);
    const Shape &s = run.shape;
    std::optional<std::string> keys = table_named(c, {"key", "aK", "_k"}, s.head_dim);
    std::optional<std::string> values = table_named(c, {"value", "aV", "_v"}, s.head_dim);
    if (!keys) case_fail("no relative key table [2K+1, head_dim] in the case");
    run.desc.shaw_keys = run.table(c.at(*keys));
    if (values) run.desc.shaw_values = run.table(c.at(*values));
    report.notes.push_back("K=" + std::to_string((c.at(*keys).shape[0] - 1) / 2));
    expect_close(report, "out", execute(run, report), c.at("out"), out_tolerance(kTolerance),
                 out_tolerance(kTolerance));
}

std::string first_tensor(const GoldenCase &c, const std::vector<std::string> &names) {
    for (const std::string &name : names) {
        if (c.has(name)) return name;
    }
    case_fail("none of the tensors " + names.front() + "... is in the case");
}

void run_txl(const GoldenCase &c, attngen_device device, Report &report) {
    AttentionRun run = prepare_attention(c, ATTNGEN_SCHEME_TXL, device, report);
    run.desc.txl_r = run.table(c.at(first_tensor(c, {"r_head_k", "r", "txl_r"})));
    run.desc.txl_u = run.table(c.at(first_tensor(c, {"r_w_bias", "u", "txl_u"})));
    run.desc.txl_v = run.table(c.at(first_tensor(c, {"r_r_bias", "v_bias", "txl_v"})));
    report.notes.push_back("mem " + std::to_string(run.shape.k_len - run.shape.q_len));
    expect_close(report, "out", execute(run, report), c.at("out"), out_tolerance(kTolerance),
                 out_tolerance(kTolerance));
}

void run_deberta(const GoldenCase &c, attngen_device device, Report &report) {
    if (!c.has("q")) {  // the bucket-function case
        const CaseTensor &relative = c.at("relative_position");
        bool any = false;
        for (const auto &[name, t] : c.tensors) {
            if (name == "relative_position" || t.dtype != "int64") continue;
            std::smatch match;
            if (!std::regex_search(name, match, std::regex(R"((\d+)\D+(\d+))"))) {
                case_fail("cannot tell the bucket_size and max_position of tensor '" + name + "'");
            }
            const int bucket_size = std::stoi(match[1].str()), max_position = std::stoi(match[2].str());
            std::vector<int32_t> got;
            for (double r : relative.data) {
                attngen::Status status;
                got.push_back(attngen::deberta_bucket(int(std::llround(r)), bucket_size, max_position, &status));
                require_ok(status, "deberta_bucket");
            }
            expect_equal_ints(report, name, got, t);
            any = true;
        }
        if (!any) case_fail("no bucket tensors in the case");
        return;
    }
    AttentionRun run = prepare_attention(c, ATTNGEN_SCHEME_DEBERTA, device, report);
    const Shape &s = run.shape;
    const CaseTensor &pos_key = c.at(first_tensor(c, {"pos_key", "pos_key_layer", "deberta_pos_key"}));
    const CaseTensor &pos_query = c.at(first_tensor(c, {"pos_query", "pos_query_layer", "deberta_pos_query"}));
    run.desc.deberta_pos_key = run.table(pos_key);
    run.desc.deberta_pos_query = run.table(pos_query);
    std::optional<double> buckets = number_param(c, {"position_buckets", "bucket_size"});
    std::optional<double> max_position = number_param(c, {"max_relative_positions", "max_position"});
    if (!buckets) buckets = from_name(c, R"(logbucket(\d+))");
    if (!max_position) max_position = from_name(c, R"(max(\d+))");
    const bool bucketed = buckets && *buckets > 0 && max_position && *max_position > 0;
    run.desc.deberta_bucket_size = bucketed ? int32_t(*buckets) : 0;
    run.desc.deberta_max_position = bucketed ? int32_t(*max_position) : 0;
    const int64_t span = pos_key.shape.size() == 3 ? pos_key.shape[1] / 2 : 0;
    // The relative positions and c2p indices of the reference, from attngen's bucket function.
    std::vector<int32_t> relative, index;
    for (int64_t i = 0; i < s.q_len; i++) {
        for (int64_t j = 0; j < s.k_len; j++) {
            const int64_t rel = (s.k_len - s.q_len + i) - j;
            const int32_t bucket =
                bucketed ? attngen::deberta_bucket(int(rel), int(*buckets), int(*max_position)) : int32_t(rel);
            relative.push_back(bucket);
            index.push_back(int32_t(std::clamp<int64_t>(bucket + span, 0, 2 * span - 1)));
        }
    }
    if (c.has("relative_position")) expect_equal_ints(report, "relative_position", relative, c.at("relative_position"));
    if (c.has("c2p_index")) expect_equal_ints(report, "c2p_index", index, c.at("c2p_index"));
    expect_close(report, "out", execute(run, report), c.at("out"), out_tolerance(kTolerance),
                 out_tolerance(kTolerance));
}

using Handler = std::function<void(const GoldenCase &, attngen_device, Report &)>;

const std::map<std::string, Handler> &handlers() {
    static const std::map<std::string, Handler> table = {
        {"sdpa", run_sdpa}, {"alibi", run_alibi}, {"sinusoidal", run_sinusoidal},
        {"t5", run_t5},     {"rope", run_rope},   {"xpos", run_xpos},
        {"shaw", run_shaw}, {"txl", run_txl},     {"deberta", run_deberta},
    };
    return table;
}

// A case whose reference rejected its parameters passes when attngen rejects them too.
bool reference_rejected(const GoldenCase &c) {
    return c.meta.contains("reference_error");
}

GoldenCase load_case(const fs::path &path) {
    std::ifstream in(path);
    json document = json::parse(in);
    GoldenCase c;
    c.meta = document.at("meta");
    c.scheme = c.meta.value("scheme", "");
    c.name = c.meta.value("case", path.stem().string());
    if (document.contains("tensors")) {
        for (const auto &item : document["tensors"].items())
            c.tensors[item.key()] = read_tensor(item.value());
    }
    return c;
}

int usage() {
    std::cerr
        << "usage: attngen-conform [--device cpu|opencl|cuda|auto] [--dtype f32|bf16] [--filter SUBSTRING] DIR...\n"
           "Runs every golden case (*.json) under each DIR; prints one line per case and\n"
           "'N passed, M failed'; exits 1 when any case fails. --dtype bf16 runs attention on\n"
           "bfloat16 q/k/v/out (fp32 math) and checks outputs at atol = rtol = 5e-2.\n";
    return 2;
}

}  // namespace

int main(int argc, char **argv) {
    attngen_device device = ATTNGEN_DEVICE_CPU;
    std::string filter;
    std::vector<fs::path> roots;
    for (int n = 1; n < argc; n++) {
        const std::string arg = argv[n];
        if (arg == "--device" && n + 1 < argc) {
            const std::string name = argv[++n];
            if (name == "cpu")
                device = ATTNGEN_DEVICE_CPU;
            else if (name == "opencl")
                device = ATTNGEN_DEVICE_OPENCL;
            else if (name == "cuda")
                device = ATTNGEN_DEVICE_CUDA;
            else if (name == "auto")
                device = ATTNGEN_DEVICE_AUTO;
            else
                return usage();
        } else if (arg == "--dtype" && n + 1 < argc) {
            const std::string name = argv[++n];
            if (name != "f32" && name != "bf16") return usage();
            g_bf16 = name == "bf16";
        } else if (arg == "--filter" && n + 1 < argc) {
            filter = argv[++n];
        } else if (arg == "-h" || arg == "--help") {
            return usage();
        } else {
            roots.push_back(arg);
        }
    }
    if (roots.empty()) return usage();

    std::vector<fs::path> files;
    for (const fs::path &root : roots) {
        if (!fs::exists(root)) {
            std::cerr << "attngen-conform: " << root << " does not exist\n";
            return 2;
        }
        if (fs::is_regular_file(root)) {
            files.push_back(root);
            continue;
        }
        for (const auto &entry : fs::recursive_directory_iterator(root)) {
            if (entry.is_regular_file() && entry.path().extension() == ".json") files.push_back(entry.path());
        }
    }
    std::sort(files.begin(), files.end());

    int passed = 0, failed = 0;
    for (const fs::path &file : files) {
        std::string label = file.parent_path().filename().string() + "/" + file.stem().string();
        if (!filter.empty() && label.find(filter) == std::string::npos) continue;
        Report report;
        std::string failure;
        try {
            GoldenCase c = load_case(file);
            label = c.scheme + "/" + c.name;
            auto handler = handlers().find(c.scheme);
            if (handler == handlers().end()) {
                failure = "scheme '" + c.scheme + "' is not supported by this runner";
            } else if (reference_rejected(c) && c.scheme != "sinusoidal") {
                // Run it anyway: passing means attngen rejects the parameters with an error.
                try {
                    handler->second(c, device, report);
                    failure = "the reference rejects these parameters, attngen accepted them";
                } catch (const CaseFailure &rejected) {
                    report.notes.push_back("reference rejected; attngen rejects too: " + rejected.message);
                }
            } else {
                handler->second(c, device, report);
            }
        } catch (const CaseFailure &f) {
            failure = f.message;
        } catch (const std::exception &e) {
            failure = std::string("cannot run the case: ") + e.what();
        }
        if (failure.empty()) {
            passed++;
            std::cout << "PASS " << label;
        } else {
            failed++;
            std::cout << "FAIL " << label << ": " << failure;
        }
        for (const std::string &check : report.checks)
            std::cout << " | " << check;
        if (!report.notes.empty()) {
            std::cout << " (";
            for (size_t n = 0; n < report.notes.size(); n++)
                std::cout << (n ? "; " : "") << report.notes[n];
            std::cout << ")";
        }
        std::cout << "\n";
    }
    std::cout << passed << " passed, " << failed << " failed\n";
    return failed == 0 && passed > 0 ? 0 : 1;
}
