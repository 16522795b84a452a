#include "attention_pipeline.h"

#include <algorithm>

namespace attngen {

using namespace Halide;

std::vector<InputSpec> attention_core_inputs() {
    return {
        {"q", Float(32), 4, "[batch, heads, q_len, head_dim]", 0},
        {"k", Float(32), 4, "[batch, kv_heads, k_len, head_dim]", 0},
        {"v", Float(32), 4, "[batch, kv_heads, k_len, head_dim]", 0},
        {"kv_len", Int(32), 1, "[batch] valid keys per batch", -1},
        {"scale", Float(32), 0, "score scale; <= 0 selects the scheme default", -1},
        {"mask_kind", Int(32), 0, "0 none, 1 causal, 2 sliding window", -1},
        {"window", Int(32), 0, "sliding window, keys", -1},
    };
}

namespace {

// An input as a float Func (bf16 storage is widened on load), or in its storage type; in fast paths the
// channel index is clamped to the runtime head_dim.
Func channel_clamped(const ImageParam &param, const Expr &runtime_head_dim, bool clamp, const std::string &name,
                     bool as_float = true) {
    Var d("d"), x("x"), y("y"), z("z");
    Func f(name);
    Expr value = param(clamp ? min(d, runtime_head_dim - 1) : Expr(d), x, y, z);
    f(d, x, y, z) = as_float ? cast<float>(value) : value;
    return f;
}

}  // namespace

AttentionPipeline define_attention_pipeline(const AttentionBindings &in, const std::string &scheme_name,
                                            const SchemeOptions &options, const Blocking &blocking,
                                            const std::vector<int> &fast_head_dims, bool generic,
                                            const HeadSharingSplit &split_head_sharing) {
    AttentionPipeline pipeline;
    pipeline.head_dim = in.q.dim(0).extent();
    // A head block serves query heads of one KV group: its copy runs where the block divides the group.
    const Expr heads = in.q.dim(2).extent(), kv_heads = in.k.dim(2).extent();
    pipeline.kv_heads_shared = heads != kv_heads;
    if (blocking.head_block > 1)
        pipeline.kv_heads_shared = heads != kv_heads && (heads / kv_heads) % blocking.head_block == 0;
    pipeline.multi_head = heads == kv_heads;
    std::vector<int> head_dims = fast_head_dims;
    if (generic || fast_head_dims.empty()) head_dims.push_back(0);

    Func kv_len("kv_len_in");
    Var b("b");
    kv_len(b) = in.kv_len(b);
    AttentionControls controls{in.scale, in.mask_kind, in.window, kv_len};

    auto define_variant = [&](int fixed, HeadSharing sharing) {
        AttentionProblem p;
        p.runtime_head_dim = pipeline.head_dim;
        p.head_dim = fixed > 0 ? Expr(fixed) : pipeline.head_dim;
        p.q_len = in.q.dim(1).extent();
        p.heads = in.q.dim(2).extent();
        p.batch = in.q.dim(3).extent();
        p.k_len = in.k.dim(1).extent();
        p.kv_heads = in.k.dim(2).extent();
        const bool clamp = fixed > 0;
        p.q = channel_clamped(in.q, pipeline.head_dim, clamp, "q_in");
        p.k = channel_clamped(in.k, pipeline.head_dim, clamp, "k_in");
        p.v = channel_clamped(in.v, pipeline.head_dim, clamp, "v_in");
        p.v_stored = channel_clamped(in.v, pipeline.head_dim, clamp, "v_stored", /*as_float=*/false);
        p.inputs = &in.scheme_inputs;
        p.single_row_tiles = blocking.query_tile == 1;
        p.mask_kind = in.mask_kind;
        p.window = in.window;
        std::unique_ptr<Scheme> scheme = make_scheme(scheme_name, options);
        // A rotation in q.k needs the channel pairing fixed (constant per vector of channels) and
        // pays off only when each key serves one query head (KV heads shared: each key is rotated once for
        // the group's head block, schedule_decode). bf16 keys too, since multi-head tasks share the cos/sin rows
        // (schedule_attention): AOT, (1,32,1,4096,128) bf16, 2 alternating runs, 0.53-0.78x the time of a rotated fp32
        // copy per chunk.
        Blocking variant_blocking = blocking;
        if (sharing != HeadSharing::SharedKvHeads) variant_blocking.head_block = 0;
        variant_blocking.key_rotation_in_product &= fixed > 0 && sharing != HeadSharing::SharedKvHeads;
        // bf16 dot products in prefill and where a head block shares each load of K and V in decode (compute
        // bound): for multi-head decode, bound by memory, P.V in key pairs took 1.07-1.10x the time and q.k
        // 0.97-1.00x (AOT, same process, (1,32,1,4096,128) bf16). bf16 pairs fill a vector of 16 float lanes
        // per 32 channels.
        variant_blocking.bf16_dot_products &= fixed > 0 && fixed % 32 == 0 &&
                                              (!p.single_row_tiles || variant_blocking.head_block > 1) &&
                                              in.k.type() == BFloat(16) && in.v.type() == BFloat(16);
        // Keys per chunk. bf16 chunks hold the fp32 entry's K/V bytes (ATTNGEN_BF16_DECODE_KEY_CHUNK_SCALE, and
        // the byte cap at bf16's size), but for schemes that keep the fp32 kernel's keys: Shaw's value term
        // (with 8 KV heads, (1,32,1,4096,128), 1024 keys took 1.25x the time of 512; plain and ALiBi took 0.90x
        // and 0.88-0.94x; AOT, 3 alternating processes) and folded edge rows, whose chunk that meets the band
        // pays its term per score (DeBERTa decode, bf16, (1,32,1,4096,128): 512 keys took 0.55x the time of
        // 1024, 0.40-0.50x with 8 KV heads; AOT, alternating processes, 2026-12-07).
        const int entry_keys = variant_blocking.key_chunk;
        auto chunk_keys = [&](bool fp32_keys) {
            if (sharing == HeadSharing::MultiHead && blocking.multi_head_key_chunk > 0)
                return blocking.multi_head_key_chunk;
            const bool bf16_bytes = in.k.type() == BFloat(16) && !fp32_keys;
            int keys = entry_keys > 0 && bf16_bytes ? entry_keys * variant_blocking.bf16_key_chunk_scale : entry_keys;
            const int key_value_bytes = fixed * (bf16_bytes ? in.k.type().bytes() + in.v.type().bytes() : 8);
            while (fixed > 0 && variant_blocking.chunk_kv_bytes_max > 0 && keys > 64 &&
                   keys * key_value_bytes > variant_blocking.chunk_kv_bytes_max) {
                keys /= 2;
            }
            return keys;
        };
        variant_blocking.key_chunk = chunk_keys(scheme->has_value_term());
        AttentionStages stages = define_attention(p, *scheme, controls, variant_blocking);
        // Whether the edge rows fold shows once the scheme's table term is defined: then again, afresh.
        const int fp32_chunk = chunk_keys(true);
        if (stages.folds_edge_rows && fp32_chunk != variant_blocking.key_chunk) {
            scheme = make_scheme(scheme_name, options);
            variant_blocking.key_chunk = fp32_chunk;
            stages = define_attention(p, *scheme, controls, variant_blocking);
        }
        pipeline.variants.push_back(stages);
        pipeline.variants.back().key_storage = in.k.type();  // for the schedule; the math reads K as float
        pipeline.variants.back().head_sharing = sharing;
        pipeline.head_dims.push_back(fixed);
    };
    for (int fixed : head_dims) {
        define_variant(fixed, HeadSharing::Any);
        const HeadSharingCopies copies =
            fixed > 0 && split_head_sharing ? split_head_sharing(pipeline.variants.back()) : HeadSharingCopies{};
        if (copies.any()) pipeline.variants.back().head_sharing = HeadSharing::OneQueryHeadPerKvHead;
        if (copies.shared_kv_heads) define_variant(fixed, HeadSharing::SharedKvHeads);
        if (copies.multi_head) define_variant(fixed, HeadSharing::MultiHead);
    }

    // The output selects the variant for the runtime head_dim (and head sharing, where a head_dim has
    // copies: the MultiHead one, else the SharedKvHeads one, else the one of one query head per tile); the
    // schedule specializes on the same conditions, in the same order, so each branch computes one variant.
    Var d("d"), i("i"), h("h");
    auto variant_value = [&](size_t n) { return pipeline.variants[n].output(d, i, h, b); };
    auto is_copy = [&](size_t n) { return is_head_sharing_copy(pipeline.variants[n].head_sharing); };
    Expr value = variant_value(pipeline.variants.size() - 1);
    for (int n = int(pipeline.variants.size()) - 2; n >= 0; n--) {
        if (is_copy(n)) continue;  // taken with the copy of one query head per tile
        Expr chosen = variant_value(n);
        for (size_t copy = n + 1; copy < pipeline.variants.size() && is_copy(copy); copy++) {
            const bool shared = pipeline.variants[copy].head_sharing == HeadSharing::SharedKvHeads;
            chosen = select(shared ? pipeline.kv_heads_shared : pipeline.multi_head, variant_value(copy), chosen);
        }
        value = select(pipeline.head_dim == pipeline.head_dims[n], chosen, value);
    }
    pipeline.output = Func("attention_out");
    pipeline.output(d, i, h, b) = cast(in.q.type(), value);  // bf16 outputs round to nearest even
    return pipeline;
}

}  // namespace attngen
