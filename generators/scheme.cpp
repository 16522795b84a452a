#include "scheme.h"

#include <mutex>
#include <sstream>
#include <stdexcept>

namespace attngen {

const Halide::ImageParam &BoundInputs::buffer(const std::string &name) const {
    auto found = buffers.find(name);
    if (found == buffers.end()) throw std::runtime_error("attngen: scheme input buffer '" + name + "' is not bound");
    return found->second;
}

Halide::Expr BoundInputs::scalar(const std::string &name) const {
    auto found = scalars.find(name);
    if (found == scalars.end()) throw std::runtime_error("attngen: scheme input scalar '" + name + "' is not bound");
    return found->second;
}

Halide::Expr AttentionProblem::first_query_seeing(const Halide::Expr &j) const {
    const Halide::Expr first = query_position(0);
    return Halide::select(mask_kind == kMaskNone, first, Halide::max(first, j));
}

Halide::Expr AttentionProblem::last_query_seeing(const Halide::Expr &j) const {
    const Halide::Expr last = query_position(q_len - 1);
    return Halide::select(mask_kind == kMaskSlidingWindow, Halide::min(last, j + window - 1), last);
}

Halide::Func AttentionProblem::table(const std::string &name) const {
    const Halide::ImageParam &param = inputs->buffer(name);
    auto channel = inputs->channel_dims.find(name);
    std::vector<Halide::Var> args;
    std::vector<Halide::Expr> index;
    for (int dim = 0; dim < param.dimensions(); dim++) {
        args.push_back(Halide::Var("t" + std::to_string(dim)));
        index.push_back(args.back());
    }
    if (channel != inputs->channel_dims.end() && channel->second >= 0) {
        index[channel->second] = Halide::min(index[channel->second], runtime_head_dim - 1);
    }
    Halide::Func wrapped(name + "_in");
    // Element-typed tables in bf16 kernels (InputSpec::element_typed) widen on load, as K and V do.
    wrapped(args) = param.type().is_bfloat() ? Halide::cast<float>(param(index)) : param(index);
    return wrapped;
}

namespace {
// Whether f's values are float32 widened from a bf16 buffer, through any chain of pure Funcs that pass
// a value on (AttentionProblem::table's element-typed tables, bf16 K).
bool reads_bf16_storage(const Halide::Func &f) {
    using namespace Halide::Internal;
    if (!f.defined() || f.outputs() != 1) return false;
    Halide::Expr value = f.value();
    while (true) {
        if (const Cast *cast = value.as<Cast>()) return cast->type.is_float() && cast->value.type().is_bfloat();
        const Call *call = value.as<Call>();
        if (!call || call->call_type != Call::Halide) return false;
        Function callee(call->func);
        if (callee.has_update_definition() || callee.outputs() != 1) return false;
        value = callee.values()[0];
    }
}
}  // namespace

Halide::Func Scheme::contraction(const std::string &name, const Halide::Func &rows, const Halide::Expr &row_count,
                                 const Halide::Func &table, const Halide::Expr &table_rows,
                                 const Halide::Expr &channels, Placement placement, const ContractionSkew &skew) const {
    using namespace Halide;
    Var c("c"), x("x"), i("i"), h("h"), b("b");
    HelperStage stage;
    stage.placement = placement;
    stage.is_contraction = true;
    stage.rows = Func(name + "_rows");
    stage.rows(c, i, h, b) = rows(c, clamp(i, 0, row_count - 1), h, b);
    stage.table = Func(name + "_table");
    stage.table(c, x, h, b) = table(c, clamp(x, 0, table_rows - 1), h, b);
    stage.product = Func(name + "_product");
    stage.product(x, i, h, b) = 0.f;
    Expr row = skew.first_row ? skew.first_row(x) + i : Expr(i);
    stage.skew_group = skew.first_row ? skew.group : 0;
    stage.bf16_pairs = bf16_contractions_ && reads_bf16_storage(table);
    if (stage.bf16_pairs) {
        // The products of vdpbf16ps: pairs of channels, the rows' pair a vector lane, the table's pair
        // broadcast (its bf16 load, the widening and rounding back cancelled by Halide's simplifier).
        Var pair("pair"), c_pair("c_pair");
        Func rows_pairs(name + "_rows_pairs");
        rows_pairs(pair, i, c_pair, h, b) = cast(BFloat(16), stage.rows(2 * c_pair + pair, i, h, b));
        stage.rows = rows_pairs;
        stage.channels = RDom(0, 2, 0, channels / 2, name + "_c");
        const RDom &rc = stage.channels;
        Expr table_pair_value = cast(BFloat(16), stage.table(2 * rc.y + rc.x, x, h, b));
        stage.product(x, i, h, b) += cast<float>(rows_pairs(rc.x, row, rc.y, h, b)) * cast<float>(table_pair_value);
    } else {
        stage.channels = RDom(0, channels, name + "_c");
        stage.product(x, i, h, b) += stage.rows(stage.channels, row, h, b) * stage.table(stage.channels, x, h, b);
    }
    stage.func = Func(name);
    if (skew.seen_run && contraction_run_block_ > 0) {
        // The run in blocks, a block computed where it meets the seen part of its group's run: the predicate
        // depends on the block and the group only, so Halide trims the block loop to it and computes the
        // product (scheduled per block) only there.
        const int block = contraction_run_block_;
        stage.run = RDom(0, block, 0, (skew.run_length + block - 1) / block, name + "_run");
        const RDom &run = stage.run;
        const auto [seen_begin, seen_end] = skew.seen_run(x / skew.group * skew.group);
        stage.run.where(run.y * block < seen_end && run.y * block + block > seen_begin);
        const Expr run_row = run.y * block + run.x;
        stage.func(x, i, h, b) = undef<float>();
        stage.func(x, run_row, h, b) = stage.product(x, run_row, h, b);
    } else {
        stage.func(x, i, h, b) = stage.product(x, i, h, b);
    }
    helpers_.push_back(stage);
    return stage.func;
}

HelperStage dot_per_score_stage(const std::string &name, const ChannelTerm &term, const Halide::Expr &channels) {
    using namespace Halide;
    Var j("j"), i("i"), h("h"), b("b");
    HelperStage stage;
    stage.placement = Placement::PerQueryTile;
    stage.is_contraction = true;
    stage.per_score = true;
    stage.channels = RDom(0, channels, name + "_c");
    stage.product = Func(name + "_product");
    stage.product(j, i, h, b) = 0.f;
    stage.product(j, i, h, b) += term(stage.channels, j, i, h, b);
    stage.func = Func(name);
    stage.func(j, i, h, b) = stage.product(j, i, h, b);
    return stage;
}

Halide::Func Scheme::dot_per_score(const std::string &name, const ChannelTerm &term,
                                   const Halide::Expr &channels) const {
    helpers_.push_back(dot_per_score_stage(name, term, channels));
    return helpers_.back().func;
}

Halide::Expr Scheme::default_scale(const AttentionProblem &p) const {
    return 1.f / Halide::sqrt(Halide::cast<float>(p.head_dim));
}

namespace {
std::map<std::string, SchemeFactory> &scheme_table() {
    static std::map<std::string, SchemeFactory> table;
    return table;
}
}  // namespace

void register_scheme(const std::string &name, SchemeFactory factory) {
    scheme_table()[name] = std::move(factory);
}

std::unique_ptr<Scheme> make_scheme(const std::string &name, const SchemeOptions &options) {
    auto found = scheme_table().find(name);
    if (found == scheme_table().end()) {
        std::ostringstream known;
        for (const auto &entry : scheme_table())
            known << " " << entry.first;
        throw std::runtime_error("attngen: unknown scheme '" + name + "'; registered:" + known.str());
    }
    return found->second(options);
}

std::vector<std::string> registered_schemes() {
    std::vector<std::string> names;
    for (const auto &entry : scheme_table())
        names.push_back(entry.first);
    return names;
}

SchemeOptions parse_scheme_options(const std::string &text) {
    SchemeOptions options;
    std::istringstream in(text);
    std::string item;
    while (std::getline(in, item, ',')) {
        if (item.empty()) continue;
        auto eq = item.find(':');
        if (eq == std::string::npos) throw std::runtime_error("attngen: scheme option '" + item + "' is not key:value");
        options[item.substr(0, eq)] = item.substr(eq + 1);
    }
    return options;
}

std::string option_or(const SchemeOptions &options, const std::string &key, const std::string &fallback) {
    auto found = options.find(key);
    return found == options.end() ? fallback : found->second;
}

}  // namespace attngen
