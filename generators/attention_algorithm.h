// The fused attention algorithm: pure Halide definitions, no scheduling.
//
//   O[b,h,i,:] = sum_j softmax_j(s_ij) V[b,g(h),j,:] (+ value term)
//   s_ij = scale * (q'_i . k'_j + score_term(i,j)) + logit_bias(i,j) + mask(i,j)
//
// The computation is blocked so that nothing of size Lq x Lk ever exists:
//   * queries are split into tiles of `query_tile` rows (ii, it);
//   * keys are split into chunks of `key_chunk` keys (jj, c). For one (tile, chunk) the scores,
//     probabilities and P.V partial sums form a small 3-stage block whose state is
//     (acc[d], max, sum) per row;
//   * the chunk states of a tile are merged with exact softmax rescaling, either in two passes
//     (all chunk states of a tile, then weights exp(m_c - m): chunks are independent, so they can
//     run in parallel — split-K) or online (one running state per row, rescaled per chunk:
//     O(1) state, the flash-attention form used on GPUs).
// Only the chunks a tile can see are visited: causal, sliding-window and padding masks bound the
// key range of each tile, and RDom predicates trim the loops to it; P.V's loop is trimmed further,
// per group of rows (Blocking::value_row_group), so a diagonal chunk skips most of its masked half.
#pragma once

#include "scheme.h"

#include <Halide.h>

#include <vector>

namespace attngen {

// Score given to masked entries. Finite on purpose: Halide assumes no infinities, and
// exp(kMaskedScore - m) is exactly 0 for any sane row max m.
constexpr float kMaskedScore = -1e30f;
// A chunk whose max is below this had every entry masked.
constexpr float kFullyMaskedBelow = -1e29f;
// Softmax weights below e^-40 (2^-57.7, relative to the row's largest) count as 0. Their whole mass is
// below fp32's rounding of the row sum for any length up to 2^33 keys, and it keeps the products of
// weights and values out of subnormal range: e^-87, the exponential's old floor, times |v| < 1 was
// subnormal, and an Intel core takes a microcode assist on each such FMA (ALiBi's long-range biases ran
// at 0.74x plain attention's speed for it on a Xeon, at 1.0x with these flushed).
constexpr float kNegligibleExponent = -40.0f;
// Scores and probabilities are computed for the keys of a chunk a tile can see, rounded out to groups
// of this many keys (chunk-relative); blocked schedules align their key blocks to it.
constexpr int kVisibleKeyGroup = 16;

enum class Merge { TwoPass, Online };

struct Blocking {
    int query_tile = 32;  // query rows per tile
    int key_chunk = 256;  // keys per chunk
    Merge merge = Merge::TwoPass;
    // Trim each chunk's key loops to the keys its tile can see (skips the masked part of diagonal
    // chunks). Off, a partially visible chunk is computed whole and masked: cheaper per key when a
    // tile has a single row (decode), where the trimming tests cannot be amortized over rows.
    bool trim_chunk_keys = true;
    // Relative terms by band (a RelativeTableTerm: Shaw's aK, DeBERTa's c2p and p2c; Shaw's aV): keys
    // at distance <= low_edge or >= high_edge from every row of the tile read one table row, and a
    // (tile, chunk) block wholly beyond Shaw's clip adds one end row of aV times its probability sum;
    // only the keys and blocks that meet the band index the tables per score. Off: per score everywhere
    // (the CUDA kernels, until the banded form has run on an NVIDIA device).
    bool relative_terms_by_band = true;
    // One-row tiles (decode), a relative table term with a key_table (DeBERTa's p2c): by band per key chunk.
    // A chunk wholly beyond an edge reads by_query's edge row and takes q + key_table[edge row] as its query
    // (chunk_query), so its keys cost q.k alone; a chunk that meets the band adds the term per score (the
    // band update over all its keys). Off: the term per score for every key.
    bool fold_edge_rows = false;
    // P.V's key loop trimmed per group of this many rows of a tile (0: per tile); a schedule's P.V
    // register block spans one group.
    int value_row_group = 0;
    // One-row tiles (decode): a key rotation (Scheme::key_rotation) folded into q.k, each key's
    // transposed rotation applied to the query inside the product; keys are read as they are. The
    // pipeline keeps it only where a schedule rotates inside the product: fixed head_dim variants with
    // float32 keys that do not serve shared KV heads (see define_attention_pipeline).
    bool key_rotation_in_product = false;
    // One-row tiles (decode) where query heads share KV heads: a tile holds this many consecutive query heads
    // of one KV group (a head block) in place of rows, so each key and value a chunk loads serves them all
    // (0: one head per tile). The stages' head index h is then the head block; the pipeline sets it only on
    // the grouped-query copy, which runs where it divides the group (AttentionPipeline::kv_heads_shared).
    int head_block = 0;
    // bf16 K and V with a fixed head_dim that is a multiple of 32, in prefill or in head blocks (grouped-query
    // decode): q.k and P.V as sums over pairs of bf16 products (a target's bf16 dot-product instruction,
    // avx512_bf16's vdpbf16ps). The query rows (scaled, transformed) and the probabilities are rounded to
    // bf16 for it, transformed keys are stored as bf16, and P.V reads V in pairs of keys (value_pairs);
    // prefill also keeps its query rows and probabilities in pairs (query_pairs, probs_pairs). The pipeline
    // keeps it only for such variants (define_attention_pipeline); not with a rotation in q.k.
    bool bf16_dot_products = false;
    // bf16 K and V: key_chunk times this, before the cap below (the build sets it for decode from
    // ATTNGEN_BF16_DECODE_KEY_CHUNK_SCALE); schemes with a value term keep key_chunk (define_attention_pipeline).
    int bf16_key_chunk_scale = 1;
    // Where head_dim is fixed, key_chunk is halved until a chunk's K and V take at most this many
    // bytes (0: no cap), so that query heads taking turns on a chunk find it in cache.
    int chunk_kv_bytes_max = 0;
    // A variant's MultiHead copy (HeadSharing) takes this key_chunk in place of key_chunk, its bf16 scale
    // and the cap above (0: as the other copies): no other query head reads its chunks again, and fewer,
    // longer chunks switch between streaming K and V less often.
    int multi_head_key_chunk = 0;
    // Multi-row tiles with trimmed chunks: scores take the mask in updates over the keys that some row of
    // the tile cannot see (AttentionStages::mask_updates), so chunks every row sees whole skip it.
    bool mask_keys_by_range = false;
    // One-row tiles with untrimmed chunks (decode): a chunk's keys in blocks of this many (0: off; a divisor
    // of key_chunk), of which a chunk computes only those up to the tile's last visible key and one wholly
    // masked block beyond (q.k, scores, probabilities), and P.V only those up to the last visible key. A
    // partial last chunk, or a chunk longer than the keys, then costs its visible blocks, not the chunk.
    int tail_key_block = 0;
    // Multi-row tiles: skewed per-call contractions (DeBERTa's p2c) in blocks of this many rows of a key
    // group's run, computing only the blocks that a query the mask lets see the group reads (0: whole runs).
    // A schedule's register block spans one block.
    int contraction_run_block = 0;
};

// Runtime controls shared by every scheme.
struct AttentionControls {
    Halide::Expr scale;      // <= 0: the scheme's default
    Halide::Expr mask_kind;  // MaskKind
    Halide::Expr window;     // sliding window size, keys
    Halide::Func kv_len;     // (b): valid keys per batch; keys j >= kv_len(b) are masked
};

// The head layouts a variant serves. A schedule may want the algorithm in more than one copy: tiles of one
// query head (OneQueryHeadPerKvHead: the layouts no other copy takes), grouped queries in blocks of
// Blocking::head_block heads (SharedKvHeads, CPU decode), and multi-head attention, heads == kv_heads
// (MultiHead: each KV head serves one query head, so no other head reads a chunk it loads).
enum class HeadSharing { Any, OneQueryHeadPerKvHead, SharedKvHeads, MultiHead };
// A copy taken beside the variant of one query head per tile (which precedes it).
inline bool is_head_sharing_copy(HeadSharing sharing) {
    return sharing == HeadSharing::SharedKvHeads || sharing == HeadSharing::MultiHead;
}

// Every stage of one attention variant, for a schedule to place.
struct AttentionStages {
    Halide::Var d{"d"}, i{"i"}, h{"h"}, b{"b"};                // output index
    Halide::Var ii{"ii"}, jj{"jj"}, c{"c"}, it{"it"}, r{"r"};  // row in tile, key in chunk, chunk, tile, table row
    Halide::RDom rd, rj, rc, rr;                               // over d, keys of a chunk, chunks, value-table rows
    Halide::RDom rk;                                           // keys of a chunk, for a table term's band
    Halide::RDom rv;                                           // keys of a chunk, for P.V (chunk_acc update 0)
    Halide::RDom rs;  // (pair, key pair) of a chunk, for chunk_sum with prefill's bf16 dot products

    // Stage indices: (ii, it) a row of a tile and the tile, h the query head; with a head block
    // (Blocking::head_block) ii is a head of the block, it the query row and h the block. The output is
    // indexed by query row and head either way.
    Halide::Func output;      // (d, i, h, b)
    Halide::Func query_tile;  // (d, ii, it, h, b): transformed, scaled query rows
    // bf16 dot products (Blocking::bf16_dot_products): the query q.k takes, rounded to bf16, per chunk
    // (d, ii, c, it, h, b); probabilities rounded to bf16 (ii, jj, c, it, h, b); V of a chunk in pairs of
    // keys, (pair, d, key_pair, c, g, b) = V[c * key_chunk + 2 key_pair + pair][d] (undefined otherwise).
    Halide::Func query_bf16, probs_bf16, value_pairs;
    // Prefill's bf16 dot products keep a pair's two values side by side with rows next: query rows in pairs of
    // channels, (pair, ii, d_pair, it, h, b) = query_tile[2 d_pair + pair][ii], and probabilities in pairs of
    // keys, (pair, ii, key_pair, c, it, h, b) = probs[ii][2 key_pair + pair]; rd and rv are then 2-D, (pair,
    // channel pair) and (pair, key pair). chunk_sum then adds the rounded probabilities (over rs).
    Halide::Func query_pairs, probs_pairs;
    // (pair): bf16 ones, chunk_sum's other operand with prefill's bf16 dot products
    Halide::Func sum_weights;
    Halide::Func query;                       // (d, i, h, b): transformed queries (the input if none)
    Halide::Func query_partner;               // (d, ii, it, h, b): see key_rotation_in_product
    Halide::Func chunk_query;                 // (d, ii, c, it, h, b): the query q.k takes (Blocking::fold_edge_rows)
    Halide::Func key, value;                  // (d, j, g, b): transformed keys; values
    Halide::Func key_begin, key_end;          // (it, b): key range a tile can see
    Halide::Func chunk_begin, chunk_end;      // (it, b): chunk range a tile can see
    Halide::Func row_key_begin, row_key_end;  // (ii, it, b): key range one row can see
    // (group, it, b): key range a group of Blocking::value_row_group rows can see (if it has one)
    Halide::Func group_key_begin, group_key_end;
    Halide::Func qk;  // (ii, jj, c, it, h, b): q.k over d
    // (ii, jj, c, it, h, b): scaled, biased, masked; a relative table term by band adds update 0 (over
    // rk): the keys of the chunk within the tile's band; masking by range adds the last updates.
    Halide::Func scores;
    // Blocking::mask_keys_by_range: the scores' updates that mask, each over its keys of the chunk.
    struct MaskUpdate {
        int index;
        Halide::RDom keys;
    };
    std::vector<MaskUpdate> mask_updates;
    Halide::Func chunk_max;  // (ii, c, it, h, b)
    Halide::Func probs;      // (ii, jj, c, it, h, b): exp(s - chunk max)
    Halide::Func chunk_sum;  // (ii, c, it, h, b)
    // (d, ii, c, it, h, b): P.V; a value term adds updates: by band, update 1 the two end rows of its
    // table and update 2 the interior rows (over rr) the chunk can reach; otherwise update 1 all rows.
    Halide::Func chunk_acc;
    Halide::Func value_tails;  // (ii, c, it, h, b): Tuple of P summed beyond -clip / +clip
    Halide::Func value_hist;   // (r, ii, c, it, h, b): P per table row; undefined without a value term
    // Two-pass merge:
    Halide::Func chunk_state;   // Tuple(acc, max, sum) over (d, ii, c, it, h, b)
    Halide::Func row_max;       // (ii, it, h, b)
    Halide::Func chunk_weight;  // (ii, c, it, h, b): exp(chunk max - row max)
    Halide::Func row_sum;       // (ii, it, h, b)
    Halide::Func row_acc;       // (d, ii, it, h, b)
    // Online merge:
    Halide::Func online_state;  // Tuple(acc, max, sum) over (d, ii, it, h, b), updated per chunk (rc)
    std::vector<HelperStage> helpers;
    std::vector<Halide::Expr> transform_specializations;  // see Scheme::transform_specializations

    Blocking blocking;
    Halide::Expr head_dim, q_len, k_len, heads, kv_heads, batch;
    bool transforms_query = false, transforms_key = false, has_value_term = false;
    bool key_rotation_in_product = false;          // q.k applies the keys' rotation to the query (Blocking)
    bool table_term_by_band = false;               // scores has the band update
    bool folds_edge_rows = false;                  // one-row tiles by band (Blocking::fold_edge_rows)
    bool bf16_dot_products = false;                // q.k (and P.V where value_pairs is defined) in bf16 pairs
    Halide::Type key_storage = Halide::Float(32);  // the K input's element type (set by the pipeline)
    HeadSharing head_sharing = HeadSharing::Any;   // the head layouts this variant serves (set by the pipeline)
};

// Builds one variant of the algorithm. `problem.head_dim` may be a constant (a fast path) or the
// runtime extent. `scheme` must be freshly made: its hooks are called once.
AttentionStages define_attention(const AttentionProblem &problem, Scheme &scheme, const AttentionControls &controls,
                                 const Blocking &blocking);

}  // namespace attngen
