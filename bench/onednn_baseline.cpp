#include "onednn_baseline.h"

#include "thread_pool.h"

#include <dnnl.hpp>

#include <cstring>

namespace attngen_bench {

namespace {
// Upper bound of one group's score matrix (the bias, when present, is as large again).
constexpr std::size_t kGroupScoreBytes = std::size_t(64) << 20;

dnnl::engine &cpu_engine() {
    static dnnl::engine engine(dnnl::engine::kind::cpu, 0);
    return engine;
}
}  // namespace

struct OnednnAttention::Impl {
    using tag = dnnl::memory::format_tag;
    using dt = dnnl::memory::data_type;

    const Problem &p;
    int G = 1, groups = 1;
    bool transform_q = false, expand_kv = false, bias_per_head = false, bias_mask_only = false;
    dnnl::stream stream{cpu_engine()};
    dnnl::memory::desc q_md, kt_md, s_md, v_md, o_md, bias_md;
    dnnl::matmul qk, pv;
    dnnl::softmax_forward softmax;
    std::string impl_info;
    std::vector<float> q_group, k_group, v_group, bias, scores;
    std::vector<HeadScratch> scratch;

    explicit Impl(const Problem &problem) : p(problem) {
        const int BH = p.B * p.H;
        const std::size_t head_scores = std::size_t(p.Lq) * p.Lk * sizeof(float);
        G = 1;
        for (int g = BH; g >= 1; g--)
            if (BH % g == 0 && std::size_t(g) * head_scores <= kGroupScoreBytes) {
                G = g;
                break;
            }
        groups = BH / G;
        transform_q = p.rotary() || p.config.scheme == SchemeId::Txl;
        expand_kv = p.rotary() || p.Hkv != p.H;  // GQA: K/V copied per query head
        bias_per_head = p.has_positional_bias();
        bias_mask_only = !bias_per_head && p.config.causal;

        const dnnl::memory::dim g = G, Lq = p.Lq, Lk = p.Lk, D = p.D;
        q_md = dnnl::memory::desc({g, Lq, D}, dt::f32, tag::abc);
        kt_md = dnnl::memory::desc({g, D, Lk}, dt::f32, dnnl::memory::dims{Lk * D, 1, D});  // K^T as strides of K
        s_md = dnnl::memory::desc({g, Lq, Lk}, dt::f32, tag::abc);
        v_md = dnnl::memory::desc({g, Lk, D}, dt::f32, tag::abc);
        o_md = dnnl::memory::desc({g, Lq, D}, dt::f32, tag::abc);

        dnnl::primitive_attr qk_attr;
        qk_attr.set_output_scales(0, {p.scale});
        if (bias_per_head || bias_mask_only) {
            // A [1, Lq, Lk] mask broadcast over the batch dimension sends oneDNN 2.6 to its reference
            // matmul (ref:any), so the mask-only bias is replicated per head like a positional bias.
            bias_md = dnnl::memory::desc({g, Lq, Lk}, dt::f32, tag::abc);
            dnnl::post_ops ops;
            ops.append_binary(dnnl::algorithm::binary_add, bias_md);
            qk_attr.set_post_ops(ops);
        }
        const dnnl::matmul::primitive_desc qk_pd(dnnl::matmul::desc(q_md, kt_md, s_md), qk_attr, cpu_engine());
        qk = dnnl::matmul(qk_pd);
        const dnnl::matmul::primitive_desc pv_pd(dnnl::matmul::desc(s_md, v_md, o_md), cpu_engine());
        pv = dnnl::matmul(pv_pd);
        const dnnl::softmax_forward::primitive_desc softmax_pd(
            dnnl::softmax_forward::desc(dnnl::prop_kind::forward_inference, s_md, 2), cpu_engine());
        softmax = dnnl::softmax_forward(softmax_pd);
        impl_info = std::string("qk ") + qk_pd.impl_info_str() + ", softmax " + softmax_pd.impl_info_str() + ", pv " +
                    pv_pd.impl_info_str();

        scores.resize(std::size_t(G) * Lq * Lk);
        if (transform_q) q_group.resize(std::size_t(G) * Lq * D);
        if (expand_kv) {
            k_group.resize(std::size_t(G) * Lk * D);
            v_group.resize(std::size_t(G) * Lk * D);
        }
        scratch.resize(std::size_t(baseline_pool().size()));
        for (HeadScratch &s : scratch)
            s.allocate(p, false);
        if (bias_per_head || bias_mask_only) bias.resize(std::size_t(G) * Lq * Lk);
        if (bias_mask_only) {  // the causal mask (0 / -inf), made once like a registered buffer
            materialize_bias(p, 0, 0, bias.data(), p.Lk, true, scratch[0]);
            for (int t = 1; t < G; t++)
                std::memcpy(&bias[std::size_t(t) * Lq * Lk], bias.data(), sizeof(float) * std::size_t(Lq) * Lk);
        }
    }

    void run(float *out) {
        const int Lq = p.Lq, Lk = p.Lk, D = p.D;
        dnnl::engine &engine = cpu_engine();
        for (int group = 0; group < groups; group++) {
            const int bh0 = group * G;
            if (transform_q || expand_kv || bias_per_head) {
                baseline_pool().run(G, [&](int t, int worker) {
                    HeadScratch &s = scratch[std::size_t(worker)];
                    const int b = (bh0 + t) / p.H, h = (bh0 + t) % p.H, kvh = h / p.group;
                    if (transform_q) {
                        const float *q = query_for_scores(p, b, h, s);
                        std::memcpy(&q_group[std::size_t(t) * Lq * D], q, sizeof(float) * std::size_t(Lq) * D);
                    }
                    if (expand_kv) {
                        const float *k = key_for_scores(p, b, kvh, s);
                        std::memcpy(&k_group[std::size_t(t) * Lk * D], k, sizeof(float) * std::size_t(Lk) * D);
                        std::memcpy(&v_group[std::size_t(t) * Lk * D], p.v_head(b, kvh),
                                    sizeof(float) * std::size_t(Lk) * D);
                    }
                    if (bias_per_head) materialize_bias(p, b, h, &bias[std::size_t(t) * Lq * Lk], Lk, true, s);
                });
            }
            float *q = transform_q ? q_group.data() : const_cast<float *>(p.q.data()) + std::size_t(bh0) * Lq * D;
            float *k = expand_kv ? k_group.data() : const_cast<float *>(p.k.data()) + std::size_t(bh0) * Lk * D;
            float *v = expand_kv ? v_group.data() : const_cast<float *>(p.v.data()) + std::size_t(bh0) * Lk * D;
            float *o = out + std::size_t(bh0) * Lq * D;
            dnnl::memory q_mem(q_md, engine, q), k_mem(kt_md, engine, k), s_mem(s_md, engine, scores.data());
            dnnl::memory v_mem(v_md, engine, v), o_mem(o_md, engine, o);
            std::unordered_map<int, dnnl::memory> qk_args = {
                {DNNL_ARG_SRC, q_mem}, {DNNL_ARG_WEIGHTS, k_mem}, {DNNL_ARG_DST, s_mem}};
            if (bias_per_head || bias_mask_only)
                qk_args.insert(
                    {DNNL_ARG_ATTR_MULTIPLE_POST_OP(0) | DNNL_ARG_SRC_1, dnnl::memory(bias_md, engine, bias.data())});
            qk.execute(stream, qk_args);
            softmax.execute(stream, {{DNNL_ARG_SRC, s_mem}, {DNNL_ARG_DST, s_mem}});
            pv.execute(stream, {{DNNL_ARG_SRC, s_mem}, {DNNL_ARG_WEIGHTS, v_mem}, {DNNL_ARG_DST, o_mem}});
            stream.wait();
            if (p.config.scheme == SchemeId::Shaw) {
                baseline_pool().run(G, [&](int t, int worker) {
                    shaw_value_term(p, &scores[std::size_t(t) * Lq * Lk], Lk, o + std::size_t(t) * Lq * D,
                                    scratch[std::size_t(worker)]);
                });
            }
        }
    }
};

OnednnAttention::OnednnAttention(const Problem &p) : impl_(std::make_unique<Impl>(p)) {}
OnednnAttention::~OnednnAttention() = default;

void OnednnAttention::run(float *out) {
    impl_->run(out);
}

std::string OnednnAttention::label() const {
    const dnnl_version_t *version = dnnl_version();
    return "oneDNN " + std::to_string(version->major) + "." + std::to_string(version->minor) + "." +
           std::to_string(version->patch) + ", " + std::to_string(impl_->G) + " heads per batched matmul (" +
           impl_->impl_info + ")";
}

}  // namespace attngen_bench
