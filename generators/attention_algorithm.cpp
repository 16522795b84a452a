#include "attention_algorithm.h"

#include <stdexcept>
#include <vector>

namespace attngen {

using namespace Halide;

namespace {

// e^x for the softmax's x = score - max <= 0, in ~15 vector operations (Halide's exp takes ~24,
// and it runs once per score). x = r - m ln2 with |r| <= ln2/2 (one FMA: m <= 58, so the
// rounding of ln2 adds < 3e-7 relative error), e^r = 1 + r q(r), 2^-m built in the exponent bits.
// q is a degree-4 minimax fit (relative error of e^r < 1e-7, < 1.7e-7 in fp32 arithmetic; an operation
// less than the degree-6 Taylor polynomial it replaced), or with `bf16_weights` from e^r's degree-4
// Taylor polynomial (< 6e-5, 1/30 of bf16's relative rounding error, for probabilities rounded to bf16).
// x below kNegligibleExponent (masked scores too) gives exactly 0; the clamp keeps m's conversion in range.
Expr exp_nonpositive(const Expr &x, bool bf16_weights = false) {
    Expr clamped = max(x, kNegligibleExponent);
    Expr m = cast<int>(0.5f - clamped * 1.44269504f);  // round(-x / ln2), as x <= 0
    Expr r = clamped + cast<float>(m) * 0.693147181f;
    const std::vector<float> coefficients =  // q's, highest power first
        bf16_weights ? std::vector<float>{1.0f / 24, 1.0f / 6, 0.5f, 1.0f}
                     : std::vector<float>{0.008290312252938747f, 0.041897933930158615f, 0.1666763573884964f,
                                          0.4999915063381195f, 0.9999997019767761f};
    Expr q = coefficients[0];
    for (size_t n = 1; n < coefficients.size(); n++)
        q = q * r + coefficients[n];
    Expr two_to_minus_m = reinterpret<float>((127 - m) << 23);
    return select(x < kNegligibleExponent, 0.0f, (1.0f + r * q) * two_to_minus_m);
}

// e^x for the merge's chunk weights (x <= 0, once per row and chunk), with the same floor: a subnormal
// weight would make every product with the chunk's accumulators subnormal.
Expr merge_weight(const Expr &x) {
    return select(x < kNegligibleExponent, 0.0f, exp(x));
}

}  // namespace

AttentionStages define_attention(const AttentionProblem &p, Scheme &scheme, const AttentionControls &ctl,
                                 const Blocking &blocking) {
    AttentionStages s;
    s.blocking = blocking;
    s.head_dim = p.head_dim;
    s.q_len = p.q_len;
    s.k_len = p.k_len;
    s.heads = p.heads;
    s.kv_heads = p.kv_heads;
    s.batch = p.batch;

    const int tile = blocking.query_tile;
    const int chunk = blocking.key_chunk;
    // A head block: a tile is one query row, its `ii` a head of the block `h`.
    const int head_block = blocking.head_block > 1 ? blocking.head_block : 0;
    if (head_block > 0 && tile != 1) throw std::invalid_argument("attngen: a head block needs one-row tiles");
    Var d = s.d, i = s.i, h = s.h, b = s.b, ii = s.ii, jj = s.jj, c = s.c, it = s.it, r = s.r;

    // Contractions over bf16 tables take the prefill kernel's bf16 dot products too (decode evaluates
    // them per score).
    scheme.use_bf16_contractions(blocking.bf16_dot_products && !p.single_row_tiles);
    scheme.use_contraction_run_blocks(p.single_row_tiles ? 0 : blocking.contraction_run_block);
    scheme.setup(p);
    Func query = scheme.transform_query(p, p.q);
    s.query = query;
    const Func transformed_key = scheme.transform_key(p, p.k);
    s.key = transformed_key;
    const KeyRotation key_rotation = scheme.key_rotation(p);
    s.key_rotation_in_product = blocking.key_rotation_in_product && p.single_row_tiles && key_rotation.defined();
    if (s.key_rotation_in_product) s.key = p.k;  // rotated inside q.k
    s.transforms_query = query.name() != p.q.name();
    s.transforms_key = s.key.name() != p.k.name();
    s.value = p.v;
    s.bf16_dot_products = blocking.bf16_dot_products && !s.key_rotation_in_product;
    if (s.bf16_dot_products && s.transforms_key) {
        // Stored as bf16: q.k's products are then of two bf16 values, which the dot products need.
        Func key_bf16("key_bf16");
        key_bf16(transformed_key.args()) = cast(BFloat(16), transformed_key(transformed_key.args()));
        s.key = key_bf16;
    }

    Expr scale = select(ctl.scale > 0.f, ctl.scale, scheme.default_scale(p));

    // Positions and the key range each query tile can see.
    Expr valid_keys = clamp(ctl.kv_len(b), 0, p.k_len);
    // The keys rows [first, last] can see together. The beginning is not clamped to the end (a range
    // may be empty: begin >= end): bounded by positions alone, it gives bounds inference a first
    // visible key, and chunk, for windows.
    auto keys_seen_end = [&](const Expr &last) {
        return select(ctl.mask_kind == kMaskNone, valid_keys, clamp(p.query_position(last) + 1, 0, valid_keys));
    };
    auto keys_seen_begin = [&](const Expr &first) {
        return select(ctl.mask_kind == kMaskSlidingWindow, max(p.query_position(first) - ctl.window + 1, 0), 0);
    };
    Expr first_row = it * tile;
    Expr last_row = min(it * tile + (tile - 1), p.q_len - 1);
    s.key_end = Func("key_end");
    s.key_end(it, b) = keys_seen_end(last_row);
    s.key_begin = Func("key_begin");
    s.key_begin(it, b) = keys_seen_begin(first_row);
    s.chunk_begin = Func("chunk_begin");
    s.chunk_begin(it, b) = s.key_begin(it, b) / chunk;
    s.chunk_end = Func("chunk_end");
    s.chunk_end(it, b) =
        select(s.key_end(it, b) > s.key_begin(it, b), (s.key_end(it, b) + (chunk - 1)) / chunk, s.chunk_begin(it, b));

    // Query rows of a tile, transformed and scaled. Rows past q_len (the last tile's tail) repeat the
    // last row; their results are never stored.
    Expr row = head_block > 0 ? Expr(it) : it * tile + ii;
    Expr clamped_row = min(row, p.q_len - 1);
    // The query head of a stage's (ii, h); the heads of a block share one KV head.
    // (Clamped: a helper computed once per call for both copies is bounded over the union of their reads, the
    // head-block copy's included where it does not run, e.g. 6 heads in groups of 2.)
    Expr head = head_block > 0 ? min(h * head_block + ii, p.heads - 1) : Expr(h);
    s.query_tile = Func("query_tile");
    s.query_tile(d, ii, it, h, b) = query(d, clamped_row, head, b) * scale;

    // Scores of one (tile, chunk) block.
    // K and V rows read past the last valid key (the tail of a partial last chunk, a batch's padding past
    // kv_len) repeat that key: q.k and P.V never read a padding row. (Unclamped reads for full chunks, a
    // specialization, measured no faster and made the fixed head_dim paths take up to 1.6x as long to
    // generate.) (Clamped to the chunk's first key too, which a chunk the tile visits never passes: bounds
    // inference then bounds the reads by the chunk, as the GPU schedules' staged copies need.)
    Expr chunk_start = c * chunk;
    Expr last_valid_key = max(valid_keys - 1, chunk_start);
    auto key_in_range = [&](const Expr &index) { return min(index, last_valid_key); };
    // The key positions the scheme's hooks see, whose terms may index tables and read K (DeBERTa's p2c), repeat
    // only the last of k_len: clamped to the valid keys, their bounds reach back to the chunk's first key for
    // every vector of keys, and a helper computed per vector of scores covered all of it (decode: Transformer-XL
    // took 11x the time, 44x with 8 KV heads). Scores past the valid keys are masked by a select, not a sum,
    // so whatever a hook reads in a padding row (NaN, inf) cannot reach the output.
    auto position_in_range = [&](const Expr &index) { return min(index, p.k_len - 1); };
    Expr key_index = chunk_start + jj;
    // Untrimmed one-row chunks in blocks (Blocking::tail_key_block): the blocks that hold a key the tile
    // sees. The reductions over a chunk's scores read the blocks past those as one wholly masked block
    // (probability 0, no effect on the max), so bounds inference computes q.k and the probabilities for
    // the seen blocks and that one; P.V skips the unseen blocks (its loop's steady state has no test).
    enum class TailBlocks { All, ReadMaskedBlock, Skip };
    const int tail_block = blocking.tail_key_block;
    const bool blocks_tail = !blocking.trim_chunk_keys && p.single_row_tiles && tail_block > 0 &&
                             chunk % tail_block == 0 && chunk > tail_block;
    auto seen_blocks = [&]() {
        return clamp((s.key_end(it, b) - chunk_start + tail_block - 1) / tail_block, 0, chunk / tail_block);
    };
    // A key loop over the chunk, trimmed (when the blocking asks) to the keys in [begin, end) (by
    // default, those the tile can see), and further to the chunks where `only_if` holds; returns the
    // loop's key within the chunk. Untrimmed, `tail` selects what blocks_tail does with it.
    auto visible_keys = [&](RDom &keys, const Expr &only_if, Expr begin = Expr(), Expr end = Expr(),
                            TailBlocks tail = TailBlocks::All) -> Expr {
        Expr key = chunk_start + keys;
        if (!blocking.trim_chunk_keys) {
            if (blocks_tail && tail == TailBlocks::ReadMaskedBlock && !only_if.defined()) {
                Expr computed_blocks = min(seen_blocks() + 1, chunk / tail_block);
                return min(keys / tail_block, computed_blocks - 1) * tail_block + keys % tail_block;
            }
            if (blocks_tail && tail == TailBlocks::Skip && !only_if.defined()) {
                Expr blocks = max(seen_blocks(), 1);
                keys.where(likely(keys / tail_block < blocks));
                return unsafe_promise_clamped(keys, 0, blocks * tail_block - 1);
            }
            if (only_if.defined()) keys.where(only_if);
            return keys;
        }
        Expr tile_begin = s.key_begin(it, b), tile_end = s.key_end(it, b);
        if (!begin.defined()) begin = tile_begin;
        if (!end.defined()) end = tile_end;
        Expr visible = key >= begin && key < end;
        keys.where(only_if.defined() ? only_if && visible : visible);
        // The predicate alone does not bound what bounds inference asks of the scores and
        // probabilities: promising the key within the visible 16-key groups (which the predicate
        // guarantees) makes a diagonal, windowed or padded chunk compute only those groups.
        // A narrower range (a group of the tile's rows) lies within the tile's: the promise intersects
        // the two, which bounds inference can bound over several groups (the predicate keeps the
        // narrower range alone: the loop bounds are solved from it exactly).
        begin = max(begin, tile_begin);
        end = min(end, tile_end);
        const int group = kVisibleKeyGroup;
        Expr first = clamp(begin - chunk_start, 0, chunk - 1) / group * group;
        Expr last = clamp((end - chunk_start + group - 1) / group * group, first + group, chunk) - 1;
        return unsafe_promise_clamped(keys, first, last);
    };
    // The same over pairs of keys: `pairs` is (pair, key pair); a key pair is visited when either of its
    // keys is visible (the other, within the same visible group, has probability 0). Returns the key pair.
    auto visible_key_pairs = [&](RDom &pairs, Expr begin, Expr end) -> Expr {
        Expr tile_begin = s.key_begin(it, b), tile_end = s.key_end(it, b);
        Expr first_key = chunk_start + 2 * pairs.y;
        pairs.where(first_key + 1 >= begin && first_key < end);
        begin = max(begin, tile_begin);
        end = min(end, tile_end);
        const int group = kVisibleKeyGroup;
        Expr first = clamp(begin - chunk_start, 0, chunk - 1) / group * group;
        Expr last = clamp((end - chunk_start + group - 1) / group * group, first + group, chunk) - 1;
        return unsafe_promise_clamped(pairs.y, first / 2, last / 2);
    };

    // Distances j - p_i between the tile's rows and the keys it sees in this chunk lie in
    // [nearest, farthest].
    Expr visible_begin = max(s.key_begin(it, b), chunk_start), visible_end = min(s.key_end(it, b), chunk_start + chunk);
    Expr nearest = visible_begin - p.query_position(last_row);
    Expr farthest = visible_end - 1 - p.query_position(first_row);
    Expr clamped_key = key_in_range(key_index), key_position = position_in_range(key_index);
    // (Clamped for a head block: bounds inference over a task's blocks otherwise reaches past the KV heads.)
    Expr kv_head = head_block > 0 ? clamp(p.kv_head(h * head_block), 0, p.kv_heads - 1) : p.kv_head(h);

    const RelativeTableTerm table_term = scheme.relative_table_term(p);
    const bool term_by_band = table_term.defined() && table_term.by_band && blocking.relative_terms_by_band;
    // One-row tiles go by band only where the edge rows fold into the query: otherwise a row's keys read
    // one table entry each anyway.
    s.folds_edge_rows = p.single_row_tiles && term_by_band && blocking.fold_edge_rows &&
                        table_term.key_table.defined() && !s.key_rotation_in_product;
    s.table_term_by_band = term_by_band && (!p.single_row_tiles || s.folds_edge_rows);
    Expr low_edge, high_edge;
    if (s.table_term_by_band) {
        // Every distance lies in (-(k_len + q_len), k_len + q_len): edges beyond it change nothing, and
        // clamped to it they cannot overflow.
        Expr distance_bound = p.k_len + p.q_len;
        low_edge = max(table_term.low_edge, -distance_bound);
        high_edge = min(table_term.high_edge, distance_bound);
    }
    // Folding edge rows: the chunk's visible keys all lie at or beyond one edge from the (one) row.
    Expr chunk_beyond_low, chunk_beyond_high;
    if (s.folds_edge_rows) {
        chunk_beyond_low = farthest <= low_edge;
        chunk_beyond_high = nearest >= high_edge;
    }
    // One-row tiles evaluate a key_table's by_key per score: key . key_table[row] (a kernel helper).
    std::vector<HelperStage> kernel_helpers;
    Func key_dot_table;
    if (p.single_row_tiles && table_term.defined() && table_term.key_table.defined()) {
        const Func key_table = table_term.key_table;
        kernel_helpers.push_back(dot_per_score_stage(
            "table_key_dot",
            [&](const Expr &channel, const Expr &key, const Expr &query_row, const Expr &head, const Expr &batch) {
                Expr row_of_pair = table_term.row(key - p.query_position(query_row));
                return transformed_key(channel, key, p.kv_head(head), batch) *
                       key_table(channel, row_of_pair, head, batch);
            },
            p.head_dim));
        key_dot_table = kernel_helpers.back().func;
    }

    s.rd = RDom(0, p.head_dim, "rd");
    s.qk = Func("qk");
    s.qk(ii, jj, c, it, h, b) = 0.f;
    Expr query_channel = s.query_tile(s.rd, ii, it, h, b);
    if (s.folds_edge_rows) {
        // A chunk beyond an edge: q.k + k.key_table[edge row] = k.(q + key_table[edge row]), scaled alike.
        Expr beyond_edge = chunk_beyond_low || chunk_beyond_high;
        Expr edge_row = select(chunk_beyond_low, table_term.row(low_edge), table_term.row(high_edge));
        s.chunk_query = Func("chunk_query");
        s.chunk_query(d, ii, c, it, h, b) =
            s.query_tile(d, ii, it, h, b) +
            select(beyond_edge, scale * table_term.key_table(d, edge_row, head, b), 0.f);
        query_channel = s.chunk_query(s.rd, ii, c, it, h, b);
    }
    if (s.key_rotation_in_product) {
        // q . (R_n k) = (R_n^T q) . k: keys load as they are; the pair swap is the query's, once per row.
        s.query_partner = Func("query_partner");
        s.query_partner(d, ii, it, h, b) = transposed_partner(key_rotation, s.query_tile, d, {ii, it, h, b});
        query_channel = transposed_rotation(key_rotation, query_channel, s.query_partner(s.rd, ii, it, h, b), s.rd,
                                            key_position, b);
    }
    // Prefill's bf16 dot products: rows of a tile side by side, each a pair of channels.
    const bool dot_products_in_row_pairs = s.bf16_dot_products && !p.single_row_tiles;
    if (dot_products_in_row_pairs) {
        Var pair("pair"), d_pair("d_pair");
        s.query_pairs = Func("query_pairs");
        s.query_pairs(pair, ii, d_pair, it, h, b) = cast(BFloat(16), s.query_tile(2 * d_pair + pair, ii, it, h, b));
        s.rd = RDom(0, 2, 0, p.head_dim / 2, "rd");
        query_channel = cast<float>(s.query_pairs(s.rd.x, ii, s.rd.y, it, h, b));
    } else if (s.bf16_dot_products) {
        s.query_bf16 = Func("query_bf16");
        s.query_bf16(d, ii, c, it, h, b) =
            cast(BFloat(16), s.folds_edge_rows ? s.chunk_query(d, ii, c, it, h, b) : s.query_tile(d, ii, it, h, b));
        query_channel = cast<float>(s.query_bf16(s.rd, ii, c, it, h, b));
    }
    Expr channel = dot_products_in_row_pairs ? 2 * s.rd.y + s.rd.x : Expr(s.rd);
    s.qk(ii, jj, c, it, h, b) += query_channel * cast<float>(s.key(channel, clamped_key, kv_head, b));

    Expr score = s.qk(ii, jj, c, it, h, b);
    Expr term = scheme.score_term(p, clamped_row, key_position, head, b);
    if (term.defined()) score += scale * term;

    // Table rows are monotone in the distance, so a tile's reads lie between the row bounds at its
    // nearest and farthest visible distances: clamped to them, a per-tile table is computed over those
    // rows only (bounds inference cannot bound a row read through a Func). The clamp changes no visible
    // score. (Decode, DeBERTa: a causal row reaches half of c2p's table, and the table's reads were a
    // fifth of the call's memory traffic.)
    Expr table_row_lo, table_row_hi;
    if (table_term.defined() && table_term.row_lower && table_term.row_upper) {
        // The tile's distance range over all its chunks (`nearest`/`farthest` above are per chunk).
        Expr tile_nearest = s.key_begin(it, b) - p.query_position(last_row);
        Expr tile_farthest = s.key_end(it, b) - 1 - p.query_position(first_row);
        table_row_lo = min(table_term.row_lower(tile_nearest), table_term.row_lower(tile_farthest));
        table_row_hi = max(table_term.row_upper(tile_nearest), table_term.row_upper(tile_farthest));
    }
    auto clamp_row = [&](const Expr &row) {
        return table_row_lo.defined() ? clamp(row, table_row_lo, table_row_hi) : row;
    };
    auto by_query_at = [&](const Expr &row, const Expr &query_row) {
        return table_term.by_query(clamp_row(row), query_row, head, b);
    };
    auto table_term_at = [&](Expr row, const Expr &query_row, const Expr &key) {
        row = clamp_row(row);
        Expr sum;
        if (table_term.by_query.defined()) sum = table_term.by_query(row, query_row, head, b);
        if (key_dot_table.defined() || table_term.by_key.defined()) {
            Expr by_key =
                key_dot_table.defined() ? key_dot_table(key, query_row, head, b) : table_term.by_key(row, key, head, b);
            sum = sum.defined() ? sum + by_key : by_key;
        }
        return sum;
    };
    if (table_term.defined() && !s.table_term_by_band) {
        score += scale *
                 table_term_at(table_term.row(key_position - p.query_position(clamped_row)), clamped_row, key_position);
    }
    Expr band_left_edge, band_right_edge;
    // By band, the tables are read at the unclamped `row`: a vector of a tile's rows then reads a per-tile
    // table (c2p) and the distance -> row table contiguously; at the clamped row, min(ramp, q_len - 1),
    // every such read was a gather (JIT, DeBERTa 4x256^2: 0.94x the time). Rows past q_len (the last
    // tile's tail) read entries of their own positions (contractions clamp the rows they read); their
    // scores are never stored.
    if (s.folds_edge_rows) {
        // A chunk beyond an edge reads by_query's edge row (its by_key is in chunk_query); a chunk that
        // meets the band adds the whole term per score, in the update below.
        if (table_term.by_query.defined()) {
            score += scale * select(chunk_beyond_low, by_query_at(table_term.row(low_edge), clamped_row),
                                    chunk_beyond_high, by_query_at(table_term.row(high_edge), clamped_row), 0.f);
        }
    } else if (s.table_term_by_band) {
        // A key at or before the left edge lies at distance <= low_edge from every row of the tile, one at
        // or after the right edge at >= high_edge: such keys read one table row (a contiguous load over
        // rows, a scalar per key), under a condition on the key alone. Only the keys between index the
        // tables per score: the update below.
        band_left_edge = p.query_position(first_row) + low_edge;
        band_right_edge = p.query_position(last_row) + high_edge;
        score += scale * select(key_index <= band_left_edge, table_term_at(table_term.row(low_edge), row, key_position),
                                key_index >= band_right_edge,
                                table_term_at(table_term.row(high_edge), row, key_position), 0.f);
    }
    Expr bias = scheme.logit_bias(p, clamped_row, key_position, head, b);
    if (bias.defined()) score += bias;
    // The keys a row can see form one range: two comparisons per score, whatever the mask.
    Expr position = p.query_position(row);
    s.row_key_begin = Func("row_key_begin");
    s.row_key_begin(ii, it, b) = select(ctl.mask_kind == kMaskSlidingWindow, position - ctl.window + 1, 0);
    s.row_key_end = Func("row_key_end");
    s.row_key_end(ii, it, b) = select(ctl.mask_kind == kMaskNone, valid_keys, min(valid_keys, position + 1));
    auto allowed_at = [&](const Expr &key) {
        return key >= s.row_key_begin(ii, it, b) && key < s.row_key_end(ii, it, b);
    };
    s.scores = Func("scores");
    // Masked by updates (Blocking::mask_keys_by_range): only where a chunk holds keys that some row of
    // the tile cannot see; otherwise every score of every chunk.
    const bool mask_by_range = blocking.mask_keys_by_range && blocking.trim_chunk_keys && !p.single_row_tiles;
    s.scores(ii, jj, c, it, h, b) = mask_by_range ? score : select(allowed_at(key_index), score, kMaskedScore);
    if (s.table_term_by_band) {
        s.rk = RDom(0, chunk, "band_keys");
        Expr rk_key = chunk_start + s.rk;
        // Folding: every key of a chunk that meets the band (the chunk's tail past the last key repeats
        // it, as q.k does).
        Expr band_key = s.folds_edge_rows ? visible_keys(s.rk, !(chunk_beyond_low || chunk_beyond_high))
                                          : visible_keys(s.rk, rk_key > band_left_edge && rk_key < band_right_edge);
        Expr key = chunk_start + band_key;
        if (s.folds_edge_rows) key = position_in_range(key);
        Expr band_term = scale * table_term_at(table_term.row(key - p.query_position(row)), row, key);
        // (Folding, past the valid keys: masked scores stay masked, whatever the term read there.)
        if (s.folds_edge_rows) band_term = select(allowed_at(chunk_start + band_key), band_term, 0.f);
        s.scores(ii, band_key, c, it, h, b) += band_term;
    }
    if (mask_by_range) {
        // Every row of the tile sees the keys from the last row's first to the first row's end (rows see
        // ranges that move forward with the row): only keys after or before those take the mask (a
        // causal diagonal, a window's trailing edge). A key in both ranges is masked twice: still masked.
        // In key pairs (bf16 dot products) the ranges extend to whole pairs: a pair that holds a visible key
        // is read whole, its other key past the tile's range included.
        auto whole_pairs_end = [&](const Expr &end) { return dot_products_in_row_pairs ? (end + 1) / 2 * 2 : end; };
        auto whole_pairs_begin = [&](const Expr &begin) { return dot_products_in_row_pairs ? begin / 2 * 2 : begin; };
        auto mask_keys_between = [&](const std::string &name, const Expr &begin, const Expr &end) {
            RDom keys(0, chunk, name);
            Expr masked_key = visible_keys(keys, Expr(), begin, end);
            s.scores(ii, masked_key, c, it, h, b) =
                select(allowed_at(chunk_start + masked_key), s.scores(ii, masked_key, c, it, h, b), kMaskedScore);
            s.mask_updates.push_back({s.scores.num_update_definitions() - 1, keys});
        };
        mask_keys_between("keys_past_first_row", keys_seen_end(first_row), whole_pairs_end(s.key_end(it, b)));
        mask_keys_between("keys_before_last_row", whole_pairs_begin(s.key_begin(it, b)), keys_seen_begin(last_row));
    }

    // Per-chunk softmax statistics over the keys of the chunk that the tile can see.
    s.rj = RDom(0, chunk, "rj");
    Expr rj_key = chunk_start + s.rj;
    Expr visible_rj = visible_keys(s.rj, Expr(), Expr(), Expr(), TailBlocks::ReadMaskedBlock);
    s.chunk_max = Func("chunk_max");
    s.chunk_max(ii, c, it, h, b) = kMaskedScore;
    s.chunk_max(ii, c, it, h, b) = max(s.chunk_max(ii, c, it, h, b), s.scores(ii, visible_rj, c, it, h, b));
    Expr chunk_max = s.chunk_max(ii, c, it, h, b);
    // A fully masked chunk keeps exp(masked - 0) == 0, so its sums are exactly zero.
    Expr pivot = select(chunk_max > kFullyMaskedBelow, chunk_max, 0.f);
    s.probs = Func("probs");
    // Rounded to bf16 for the dot products, the probabilities need only a degree-4 exponential.
    s.probs(ii, jj, c, it, h, b) = exp_nonpositive(s.scores(ii, jj, c, it, h, b) - pivot, dot_products_in_row_pairs);
    s.chunk_sum = Func("chunk_sum");
    s.chunk_sum(ii, c, it, h, b) = 0.f;
    Var pair("pair"), key_pair("key_pair"), g("g");
    if (dot_products_in_row_pairs) {
        // Key pairs: the probabilities rounded, with a row's pair side by side. The chunk's sum adds them as
        // rounded (the weights P.V applies), so the probabilities need no fp32 copy.
        s.probs_pairs = Func("probs_pairs");
        s.probs_pairs(pair, ii, key_pair, c, it, h, b) =
            cast(BFloat(16), s.probs(ii, 2 * key_pair + pair, c, it, h, b));
        s.rs = RDom(0, 2, 0, chunk / 2, "sum_keys");
        Expr sum_key_pair = visible_key_pairs(s.rs, s.key_begin(it, b), s.key_end(it, b));
        // As dot products with a pair of ones (stored, so that the product stays one): a bf16 dot-product
        // instruction sums a pair per lane, where widening them and separating the pairs took four.
        s.sum_weights = Func("sum_weights");
        s.sum_weights(pair) = cast(BFloat(16), 1.f);
        s.chunk_sum(ii, c, it, h, b) +=
            cast<float>(s.probs_pairs(s.rs.x, ii, sum_key_pair, c, it, h, b)) * cast<float>(s.sum_weights(s.rs.x));
    } else {
        s.chunk_sum(ii, c, it, h, b) += s.probs(ii, visible_rj, c, it, h, b);
    }

    // P.V over the keys of the chunk that each group of `value_row_group` rows (the schedule's P.V
    // register block) can see: on a diagonal chunk the block skips the masked triangle at that
    // granularity rather than the tile's (the scores and probabilities there are computed per tile).
    s.rv = dot_products_in_row_pairs ? RDom(0, 2, 0, chunk / 2, "value_keys") : RDom(0, chunk, "value_keys");
    Expr value_begin, value_end;  // undefined: the tile's key range
    if (blocking.value_row_group > 0) {
        const int rows = blocking.value_row_group;
        Var group("group");
        Expr group_first_row = min(it * tile + group * rows, p.q_len - 1);
        Expr group_last_row = min(it * tile + group * rows + (rows - 1), p.q_len - 1);
        s.group_key_begin = Func("group_key_begin");
        s.group_key_begin(group, it, b) = keys_seen_begin(group_first_row);
        s.group_key_end = Func("group_key_end");
        s.group_key_end(group, it, b) = keys_seen_end(group_last_row);
        value_begin = s.group_key_begin(ii / rows, it, b);
        value_end = s.group_key_end(ii / rows, it, b);
    }
    Expr value_key;  // the key, or with dot_products_in_row_pairs the key pair
    // One-row tiles' bf16 dot products: P.V over V's rows in pairs of keys.
    const bool values_in_key_pairs = s.bf16_dot_products && !dot_products_in_row_pairs && !blocking.trim_chunk_keys &&
                                     chunk % 2 == 0 && blocking.value_row_group == 0;
    if (dot_products_in_row_pairs) {
        if (chunk % 2 != 0 || !blocking.trim_chunk_keys)
            throw std::invalid_argument("attngen: bf16 dot products in prefill need even, trimmed key chunks");
        value_key = visible_key_pairs(s.rv, value_begin.defined() ? value_begin : s.key_begin(it, b),
                                      value_end.defined() ? value_end : s.key_end(it, b));
    } else {
        // (Not where P.V takes keys in bf16 pairs: the test per key pair keeps its loop from the dot products.)
        value_key = visible_keys(s.rv, Expr(), value_begin, value_end,
                                 values_in_key_pairs ? TailBlocks::All : TailBlocks::Skip);
    }
    s.chunk_acc = Func("chunk_acc");
    s.chunk_acc(d, ii, c, it, h, b) = 0.f;
    auto define_value_pairs = [&] {
        s.value_pairs = Func("value_pairs");
        s.value_pairs(pair, d, key_pair, c, g, b) = p.v_stored(d, key_in_range(c * chunk + 2 * key_pair + pair), g, b);
    };
    if (dot_products_in_row_pairs) {
        // V's rows 2m and 2m + 1 of a chunk interleaved (keys past the last repeat it).
        define_value_pairs();
        s.chunk_acc(d, ii, c, it, h, b) += cast<float>(s.probs_pairs(s.rv.x, ii, value_key, c, it, h, b)) *
                                           cast<float>(s.value_pairs(s.rv.x, d, value_key, c, kv_head, b));
    } else if (values_in_key_pairs) {
        // In bf16 pairs of keys: the probabilities rounded, V's rows 2m and 2m + 1 of a chunk interleaved
        // (keys past the last repeat it; their probabilities are 0).
        s.probs_bf16 = Func("probs_bf16");
        s.probs_bf16(ii, jj, c, it, h, b) = cast(BFloat(16), s.probs(ii, jj, c, it, h, b));
        define_value_pairs();
        s.chunk_acc(d, ii, c, it, h, b) += cast<float>(s.probs_bf16(ii, value_key, c, it, h, b)) *
                                           cast<float>(s.value_pairs(value_key % 2, d, value_key / 2, c, kv_head, b));
    } else {
        s.chunk_acc(d, ii, c, it, h, b) +=
            s.probs(ii, value_key, c, it, h, b) * s.value(d, key_in_range(chunk_start + value_key), kv_head, b);
    }

    s.has_value_term = scheme.has_value_term();
    if (s.has_value_term) {
        ValueTerm vt = scheme.value_term(p);
        // Probability at distance r - clip: the one key at that distance, if visible (a gather, no scatter).
        Expr key_at_r = p.query_position(row) + r - vt.clip;
        Expr key_in_chunk = clamp(key_at_r, visible_begin, max(visible_end - 1, visible_begin)) - chunk_start;
        Expr prob_at_r =
            select(key_at_r >= visible_begin && key_at_r < visible_end, s.probs(ii, key_in_chunk, c, it, h, b), 0.f);
        // The tails: probability mass at distances <= -clip and >= clip, over a loop of keys.
        s.value_tails = Func("value_tails");  // (ii, c, it, h, b): Tuple(mass at <= -clip, mass at >= clip)
        s.value_tails(ii, c, it, h, b) = Tuple(0.f, 0.f);
        auto sum_tails = [&](const Expr &key, const Expr &distance) {
            Expr prob = s.probs(ii, key, c, it, h, b);
            s.value_tails(ii, c, it, h, b) =
                Tuple(s.value_tails(ii, c, it, h, b)[0] + select(distance <= -vt.clip, prob, 0.f),
                      s.value_tails(ii, c, it, h, b)[1] + select(distance >= vt.clip, prob, 0.f));
        };
        s.value_hist = Func("value_hist");
        if (!blocking.relative_terms_by_band) {
            // Per chunk, the mass of every clipped distance (tails in rows 0 and 2 clip), then the
            // whole (2 clip + 1)-row product.
            sum_tails(visible_rj, rj_key - p.query_position(row));
            s.value_hist(r, ii, c, it, h, b) = select(r == 0, s.value_tails(ii, c, it, h, b)[0], r == 2 * vt.clip,
                                                      s.value_tails(ii, c, it, h, b)[1], prob_at_r);
            s.rr = RDom(0, 2 * vt.clip + 1, "rr");
            s.chunk_acc(d, ii, c, it, h, b) += s.value_hist(s.rr, ii, c, it, h, b) * vt.table(d, s.rr, head, b);
        } else {
            // A chunk wholly in a tail (most chunks, when clip is small against the sequence) puts all
            // its mass in one end row of the table: its sum, with no work per score. Only a chunk that
            // meets the band sums its tails per score and gathers the probabilities of its interior
            // distances, over the band rows it can reach.
            Expr all_left = farthest <= -vt.clip, all_right = nearest >= vt.clip;
            Expr meets_band = !all_left && !all_right;

            RDom tail_keys(0, chunk, "tail_keys");
            Expr tail_key = visible_keys(tail_keys, meets_band);
            sum_tails(tail_key, chunk_start + tail_key - p.query_position(row));
            Expr chunk_sum = s.chunk_sum(ii, c, it, h, b);
            // The tails are zero outside the band (their loop is empty there) and are read for every
            // chunk: read only under a select, Halide skips them per block, which put the GPU
            // kernels' barriers inside an `if` and gave wrong values under PoCL.
            Expr left_mass = select(all_left, chunk_sum, 0.f) + s.value_tails(ii, c, it, h, b)[0];
            Expr right_mass = select(all_right, chunk_sum, 0.f) + s.value_tails(ii, c, it, h, b)[1];
            s.chunk_acc(d, ii, c, it, h, b) +=
                left_mass * vt.table(d, 0, head, b) + right_mass * vt.table(d, 2 * vt.clip, head, b);

            // Interior rows 0 < r < 2 clip, over the rows the chunk can reach.
            s.value_hist(r, ii, c, it, h, b) = prob_at_r;
            Expr band_first = clamp(vt.clip + nearest, 1, 2 * vt.clip - 1);
            Expr band_last = clamp(vt.clip + farthest, band_first, 2 * vt.clip - 1);
            s.rr = RDom(1, 2 * vt.clip - 1, "rr");
            s.rr.where(meets_band && s.rr >= band_first && s.rr <= band_last);
            Expr band_row = unsafe_promise_clamped(s.rr, band_first, band_last);
            s.chunk_acc(d, ii, c, it, h, b) += s.value_hist(band_row, ii, c, it, h, b) * vt.table(d, band_row, head, b);
        }
    }

    Expr chunk_count = (p.k_len + (chunk - 1)) / chunk;
    s.rc = RDom(0, chunk_count, "rc");
    s.rc.where(s.rc >= s.chunk_begin(it, b) && s.rc < s.chunk_end(it, b));
    // As for keys: chunk states are asked for only over the chunks the tile sees (windows, padding).
    Expr last_chunk = chunk_count - 1;
    Expr first_visible_chunk = min(s.chunk_begin(it, b), last_chunk);
    Expr visible_rc = unsafe_promise_clamped(s.rc, first_visible_chunk,
                                             clamp(s.chunk_end(it, b) - 1, first_visible_chunk, last_chunk));
    // The output's (i, h) as stage indices (ii, it, h).
    Expr output_row = head_block > 0 ? h % head_block : i % tile;
    Expr output_tile = head_block > 0 ? Expr(i) : i / tile;
    Expr output_head = head_block > 0 ? h / head_block : Expr(h);
    Expr row_acc, row_sum;
    if (blocking.merge == Merge::TwoPass) {
        // All chunk states of a tile, then exact rescaling to the row max.
        s.chunk_state = Func("chunk_state");
        s.chunk_state(d, ii, c, it, h, b) =
            Tuple(s.chunk_acc(d, ii, c, it, h, b), s.chunk_max(ii, c, it, h, b), s.chunk_sum(ii, c, it, h, b));
        s.row_max = Func("row_max");
        s.row_max(ii, it, h, b) = kMaskedScore;
        s.row_max(ii, it, h, b) = max(s.row_max(ii, it, h, b), s.chunk_state(0, ii, visible_rc, it, h, b)[1]);
        s.chunk_weight = Func("chunk_weight");
        s.chunk_weight(ii, c, it, h, b) = merge_weight(s.chunk_state(0, ii, c, it, h, b)[1] - s.row_max(ii, it, h, b));
        s.row_sum = Func("row_sum");
        s.row_sum(ii, it, h, b) = 0.f;
        s.row_sum(ii, it, h, b) +=
            s.chunk_state(0, ii, visible_rc, it, h, b)[2] * s.chunk_weight(ii, visible_rc, it, h, b);
        s.row_acc = Func("row_acc");
        s.row_acc(d, ii, it, h, b) = 0.f;
        s.row_acc(d, ii, it, h, b) +=
            s.chunk_state(d, ii, visible_rc, it, h, b)[0] * s.chunk_weight(ii, visible_rc, it, h, b);
        row_acc = s.row_acc(d, output_row, output_tile, output_head, b);
        row_sum = s.row_sum(output_row, output_tile, output_head, b);
    } else {
        // One running (acc, max, sum) per row, rescaled whenever a chunk raises the max.
        s.online_state = Func("online_state");
        s.online_state(d, ii, it, h, b) = Tuple(0.f, kMaskedScore, 0.f);
        Expr old_acc = s.online_state(d, ii, it, h, b)[0];
        Expr old_max = s.online_state(d, ii, it, h, b)[1];
        Expr old_sum = s.online_state(d, ii, it, h, b)[2];
        Expr chunk_max = s.chunk_max(ii, visible_rc, it, h, b);
        Expr new_max = max(old_max, chunk_max);
        Expr keep = merge_weight(old_max - new_max), take = merge_weight(chunk_max - new_max);
        s.online_state(d, ii, it, h, b) = Tuple(old_acc * keep + s.chunk_acc(d, ii, visible_rc, it, h, b) * take,
                                                new_max, old_sum * keep + s.chunk_sum(ii, visible_rc, it, h, b) * take);
        row_acc = s.online_state(d, output_row, output_tile, output_head, b)[0];
        row_sum = s.online_state(d, output_row, output_tile, output_head, b)[2];
    }

    // A fully masked row (no visible key) is zero, never NaN. One reciprocal per row, not a
    // division per output element.
    s.output = Func("attention");
    s.output(d, i, h, b) = select(row_sum > 0.f, row_acc * (1.0f / row_sum), 0.f);

    s.helpers = scheme.helper_stages();
    s.helpers.insert(s.helpers.end(), kernel_helpers.begin(), kernel_helpers.end());
    s.transform_specializations = scheme.transform_specializations(p);
    return s;
}

}  // namespace attngen
