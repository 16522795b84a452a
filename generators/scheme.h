// The scheme DSL: a positional scheme is a small set of hooks that the one attention algorithm calls.
// A scheme never sees tiles, chunks or schedules; it speaks in absolute indices:
//   query row i in [0, q_len), key j in [0, k_len), head h, kv head g, batch b, channel d.
// Tensors follow Halide's innermost-first order: q(d, i, h, b), k(d, j, g, b), v(d, j, g, b).
#pragma once

#include "positional_math.h"

#include <Halide.h>

#include <functional>
#include <map>
#include <memory>
#include <string>
#include <vector>

namespace attngen {

// Masks: none, causal (bottom-right), or sliding window (causal and p_i - j < window).
enum MaskKind : int { kMaskNone = 0, kMaskCausal = 1, kMaskSlidingWindow = 2 };

// A kernel input beyond q, k, v: a table, slopes, position ids or a scalar.
struct InputSpec {
    std::string name;
    Halide::Type type;
    int dimensions;        // 0 for a scalar
    std::string what;      // shape/meaning, for documentation and error messages
    int channel_dim = -1;  // Halide dimension indexed by the head channel d, if any
    // Stored in the kernel's element type (bf16 kernels take it in bf16; `type` is then float32's
    // stand-in): per-head projections of activations, streamed like K and V (Transformer-XL's R,
    // DeBERTa's projections), whose bytes decode pays as it pays for K and V; or a table whose product
    // with q then runs on bf16 dot products (Shaw's aK). Hooks read it as float.
    bool element_typed = false;
};

// Inputs as bound by the generator (AOT) or the tuner (JIT).
struct BoundInputs {
    std::map<std::string, Halide::ImageParam> buffers;
    std::map<std::string, Halide::Expr> scalars;
    std::map<std::string, int> channel_dims;  // buffer name -> dimension indexed by d

    const Halide::ImageParam &buffer(const std::string &name) const;
    Halide::Expr scalar(const std::string &name) const;
};

// Where a scheme's helper Func is computed. The schedule maps each placement to loops, so a scheme
// can say "once per call" (rotated keys, a bias row) without writing a schedule.
enum class Placement {
    PerCall,       // computed once before attention, over its whole domain
    PerQueryTile,  // computed per query tile, for the tile's rows (i is its second argument)
    PerKeyChunk,   // computed per (query tile, key chunk)
};

struct HelperStage {
    Halide::Func func;
    Placement placement;
    // Set for contractions (see Scheme::contraction): func(x, i, h, b) = product(x, i, h, b), the sum
    // over channels of rows(c, i, h, b) * table(c, x, h, b), with both operands index-clamped.
    bool is_contraction = false;
    // Set for per-score dot products (see Scheme::dot_per_score): product only, no rows/table.
    bool per_score = false;
    // Set for a skewed contraction computed in run blocks (ContractionSkew::seen_run): func is written by
    // an update over run (row in block, block), its block predicated on the seen part of the run.
    Halide::RDom run;
    Halide::Func product, rows, table;
    Halide::RDom channels;
    // A contraction on bf16 dot products (Scheme::use_bf16_contractions): rows is then rows_pairs(pair, i,
    // c_pair, h, b), the rows rounded to bf16 with each pair of channels side by side, and the channels
    // RDom is (pair, c_pair).
    bool bf16_pairs = false;
    // A skewed contraction (ContractionSkew): its x come in aligned groups of this many, each reading one
    // run of rows (0: not skewed).
    int skew_group = 0;
};

// A contraction that holds, per x, only a run of the rows: out(x, i) = sum_c rows(c, first_row(x) + i) *
// table(c, x), first_row(x) the same for each aligned group of `group` consecutive x. Lets a table keep
// per key only the rows its queries reach (DeBERTa's p2c); first_row + i must stay within the rows.
struct ContractionSkew {
    std::function<Halide::Expr(const Halide::Expr &x)> first_row;
    int group = 1;
    // Optional: the part of a group's run that the mask lets its queries read, [begin, end) of the run's
    // rows given the group's first x, within [0, run_length). Where the schedule computes contractions in
    // run blocks (Scheme::use_contraction_run_blocks), only the blocks that meet it are computed (causal:
    // about half the run); the rest is never written, and only masked scores read it.
    std::function<std::pair<Halide::Expr, Halide::Expr>(const Halide::Expr &first_x)> seen_run;
    Halide::Expr run_length;  // rows of the run, with seen_run
};

// A dot product per score, out(j, i, h, b) = sum over channels c < `channels` of term(c, j, i, h, b), for
// operands that depend on both the key and the query row. Schedules evaluate it where the scores use it,
// vectorized over channels. (Scheme::dot_per_score registers one as a scheme helper; the kernel makes its
// own for a RelativeTableTerm's key_table.)
using ChannelTerm = std::function<Halide::Expr(const Halide::Expr &c, const Halide::Expr &j, const Halide::Expr &i,
                                               const Halide::Expr &h, const Halide::Expr &b)>;
HelperStage dot_per_score_stage(const std::string &name, const ChannelTerm &term, const Halide::Expr &channels);

// What the hooks can see of the problem.
struct AttentionProblem {
    // head_dim is a constant in a fast-path variant (D = 64, 128), else the runtime extent.
    Halide::Expr head_dim, runtime_head_dim, q_len, k_len, heads, kv_heads, batch;
    Halide::Func q, k, v;   // raw inputs, (d, i|j, h|g, b), as float
    Halide::Func v_stored;  // v in its storage type (bf16 dot products read it unwidened)
    const BoundInputs *inputs = nullptr;
    // Tiles hold a single query row (decode): a per-key term is cheaper evaluated at each score
    // than tabulated over all positions.
    bool single_row_tiles = false;

    // A scheme input buffer as a Func. In fast-path variants the channel index is clamped to the
    // runtime extent, so bounds inference never asks for channels the caller's buffer lacks.
    Halide::Func table(const std::string &name) const;
    Halide::Expr extent(const std::string &name, int dim) const { return inputs->buffer(name).dim(dim).extent(); }
    Halide::Expr scalar(const std::string &name) const { return inputs->scalar(name); }

    Halide::Expr kv_head(const Halide::Expr &h) const { return h / (heads / kv_heads); }
    // Bottom-right alignment: query row i sits at absolute position k_len - q_len + i.
    Halide::Expr query_position(const Halide::Expr &i) const { return k_len - q_len + i; }

    // The call's mask (MaskKind) and sliding window.
    Halide::Expr mask_kind, window;
    // Positions of the first and last query that may see key j (a window's: j to j + window - 1, a causal
    // mask's: j to the last), within the queries' positions; the first exceeds the last where none can.
    // Both minus j are non-increasing in j.
    Halide::Expr first_query_seeing(const Halide::Expr &j) const;
    Halide::Expr last_query_seeing(const Halide::Expr &j) const;
};

// Content-position term read from tables by a row of the relative distance d = j - p_i (Shaw's q_i . aK,
// DeBERTa's c2p and p2c): term(i, j) = by_query(row(d), i, h, b) + by_key(row(d), j, h, b), scaled with
// q.k. `row` is monotone in d (either way) and constant for d <= low_edge and for d >= high_edge. The
// kernel uses that structure: a query tile computes only the table rows its distances reach (given row
// bounds), and by band (see Blocking) a key at <= low_edge or >= high_edge from every row of the tile
// reads one table row (a contiguous load over rows, a scalar per key); only the keys between index the
// tables per score.
struct RelativeTableTerm {
    std::function<Halide::Expr(const Halide::Expr &)> row;  // d -> table row
    // Optional bounds row_lower(d) <= row(d) <= row_upper(d), monotone the same way as row, in cheap
    // arithmetic (no Func calls, which bounds inference cannot see through; no transcendental math,
    // which made kernel generation 4x slower). Given, each query tile computes only the table rows
    // between the bounds at its nearest and farthest distances. Unset: tiles compute whole tables.
    std::function<Halide::Expr(const Halide::Expr &)> row_lower, row_upper;
    Halide::Func by_query;  // (r, i, h, b), i a query row; or undefined
    Halide::Func by_key;    // (r, j, h, b), j a key; or undefined
    // by_key as the key times a table row, where it is one: by_key(r, j, h, b) == sum over d of
    // key(d, j, kv_head(h), b) * key_table(d, r, h, b) (DeBERTa's p2c, k_j . Qr[r]). One-row tiles (decode)
    // use it in place of by_key: a dot product per score, or, where the blocking folds edge rows
    // (Blocking::fold_edge_rows), a key chunk wholly beyond an edge takes q + key_table[edge row] as its
    // query and costs q.k alone.
    Halide::Func key_table;  // (d, r, h, b); or undefined
    Halide::Expr low_edge, high_edge;
    // Go by band where the blocking allows: per-score table reads are scalar loads (Halide 14 emits no
    // x86 gathers: a load and an insert per lane), which keys outside the band avoid. Shaw (clip
    // 16-128): most keys. DeBERTa-v3 (edges at +-511): measured 5-15 % faster at 4x256^2 and from
    // 1024^2 up, unchanged at 512^2 (JIT, same process).
    bool by_band = true;

    bool defined() const { return row != nullptr; }
};

// Value-side term (Shaw's aV): out_i += sum_j p_ij * table(d, clamp(j - p_i, -clip, clip) + clip, h, b),
// with p the softmax: a table row per clipped relative distance. The kernel folds it into the P.V pass:
// per row and key chunk, the probability mass of each distance (one key per interior distance, the
// tails summed into the end rows) times the table rows. A chunk beyond the band |j - p_i| < clip costs
// one end row (its whole mass); only chunks in the band touch interior rows.
struct ValueTerm {
    Halide::Func table;  // (d, r, h, b), r in [0, 2 clip]
    Halide::Expr clip;   // >= 1
};

// One positional scheme. Every hook is optional: an absent hook adds nothing to the generated code.
class Scheme {
public:
    virtual ~Scheme() = default;

    virtual std::string name() const = 0;
    // Kernel inputs this scheme needs, in call order.
    virtual std::vector<InputSpec> inputs() const { return {}; }
    // Called once before any hook; defines helper Funcs shared by hooks.
    virtual void setup(const AttentionProblem &) {}

    // Hook: scale applied to q.k and to score_term when the caller passes none (<= 0).
    virtual Halide::Expr default_scale(const AttentionProblem &p) const;
    // Hooks: query / key transforms (RoPE, xPos). Same index space as the input.
    virtual Halide::Func transform_query(const AttentionProblem &, const Halide::Func &q) const { return q; }
    virtual Halide::Func transform_key(const AttentionProblem &, const Halide::Func &k) const { return k; }
    // Hook: the key transform as a rotation by a per-key table, where it is one (RoPE, xPos; it must be
    // the rotation transform_key applies). Lets decode kernels fold it into q.k (KeyRotation).
    virtual KeyRotation key_rotation(const AttentionProblem &) const { return {}; }
    // Conditions under which the transforms are simpler (RoPE: rot_dim == head_dim, full rotary):
    // schedules specialize the transformed q and k on them, so the common case has no per-lane selects.
    virtual std::vector<Halide::Expr> transform_specializations(const AttentionProblem &) const { return {}; }
    // Hook: content-position term, added to q.k and scaled with it (Shaw, Transformer-XL, DeBERTa).
    virtual Halide::Expr score_term(const AttentionProblem &, const Halide::Expr & /*i*/, const Halide::Expr & /*j*/,
                                    const Halide::Expr & /*h*/, const Halide::Expr & /*b*/) const {
        return Halide::Expr();
    }
    // Hook: a content-position term read from tables by the relative distance (Shaw, DeBERTa); see
    // RelativeTableTerm. Scaled with q.k, like score_term.
    virtual RelativeTableTerm relative_table_term(const AttentionProblem &) const { return {}; }
    // Hook: bias added to the scaled score (ALiBi, T5).
    virtual Halide::Expr logit_bias(const AttentionProblem &, const Halide::Expr & /*i*/, const Halide::Expr & /*j*/,
                                    const Halide::Expr & /*h*/, const Halide::Expr & /*b*/) const {
        return Halide::Expr();
    }
    // Hook: value-side term (Shaw's aV).
    virtual bool has_value_term() const { return false; }
    virtual ValueTerm value_term(const AttentionProblem &) const { return {}; }

    // Helper Funcs the hooks defined, with where they should be computed.
    const std::vector<HelperStage> &helper_stages() const { return helpers_; }

    // Set by the kernel before setup, for kernels with bf16 dot products over whole tiles (prefill): a
    // contraction whose table is stored in bf16 then runs on them, its rows rounded to bf16 as q.k's
    // queries are. Tables stored in float32 (Shaw's) keep float32 products.
    void use_bf16_contractions(bool enabled) { bf16_contractions_ = enabled; }
    // Set by the kernel before setup, from its schedule (Blocking::contraction_run_block): skewed
    // contractions with a seen run are computed in blocks of this many run rows (0: whole runs).
    void use_contraction_run_blocks(int rows) { contraction_run_block_ = rows; }

protected:
    // Registers a helper Func for the schedule; returns it for convenience.
    Halide::Func helper(Halide::Func f, Placement placement) const {
        HelperStage stage;
        stage.func = f;
        stage.placement = placement;
        helpers_.push_back(stage);
        return f;
    }

    // A content-position product, out(x, i, h, b) = sum over channels c < `channels` of
    // rows(c, i, h, b) * table(c, x, h, b): Shaw's q.aK, Transformer-XL's (q+v).R, DeBERTa's c2p and
    // p2c. Declared as such, schedules block it like a matrix product. Row indices are clamped to
    // [0, row_count) and table indices to [0, table_rows), so schedules may compute whole blocks.
    Halide::Func contraction(const std::string &name, const Halide::Func &rows, const Halide::Expr &row_count,
                             const Halide::Func &table, const Halide::Expr &table_rows, const Halide::Expr &channels,
                             Placement placement, const ContractionSkew &skew = {}) const;

    // A dot product per score (see dot_per_score_stage), registered as a helper.
    Halide::Func dot_per_score(const std::string &name, const ChannelTerm &term, const Halide::Expr &channels) const;

private:
    mutable std::vector<HelperStage> helpers_;
    bool bf16_contractions_ = false;
    int contraction_run_block_ = 0;
};

// Scheme registry: a scheme file registers a factory under its name; generators look it up.
using SchemeOptions = std::map<std::string, std::string>;
using SchemeFactory = std::function<std::unique_ptr<Scheme>(const SchemeOptions &)>;

void register_scheme(const std::string &name, SchemeFactory factory);
std::unique_ptr<Scheme> make_scheme(const std::string &name, const SchemeOptions &options);
std::vector<std::string> registered_schemes();
// "a:1,b:two" -> {{"a","1"},{"b","two"}} (":" because generator parameters are key=value)
SchemeOptions parse_scheme_options(const std::string &text);
// Typed option lookup with a default; throws on a malformed value.
std::string option_or(const SchemeOptions &options, const std::string &key, const std::string &fallback);

#define ATTNGEN_REGISTER_SCHEME(NAME, FACTORY)         \
    namespace {                                        \
    const bool attngen_scheme_registered_##NAME = [] { \
        ::attngen::register_scheme(#NAME, FACTORY);    \
        return true;                                   \
    }();                                               \
    }

}  // namespace attngen
