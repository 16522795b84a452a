/* attngen: fused attention with positional schemes, ahead-of-time compiled with Halide.
 *
 * Plain C API. Every call validates its inputs first and returns ATTNGEN_OK or an error code;
 * on error, a message naming the problem (tensor, dimension, expected vs got) is written to the
 * caller's `error` buffer (if any). Nothing aborts the process.
 *
 * Tensors are views: data pointer, dtype, shape and strides in elements (row-major order of
 * dimensions as written in the docs, e.g. q is [batch, heads, q_len, head_dim]). All-zero strides
 * mean contiguous row-major. A tensor with data == NULL and rank == 0 is "absent".
 */
#ifndef ATTNGEN_H
#define ATTNGEN_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#define ATTNGEN_MAX_RANK 6

typedef enum attngen_status {
    ATTNGEN_OK = 0,
    ATTNGEN_ERROR_INVALID_ARGUMENT = 1, /* shapes, strides, null data, parameters */
    ATTNGEN_ERROR_UNSUPPORTED = 2,      /* valid request this build has no kernel for */
    ATTNGEN_ERROR_DEVICE_UNAVAILABLE = 3,
    ATTNGEN_ERROR_KERNEL_FAILED = 4, /* the generated kernel reported an error */
    ATTNGEN_ERROR_OUT_OF_MEMORY = 5
} attngen_status;

/* bfloat16 (q, k, v and out of attention, CPU kernels): storage only, fp32 accumulation and softmax. */
typedef enum attngen_dtype { ATTNGEN_FLOAT32 = 0, ATTNGEN_INT32 = 1, ATTNGEN_BFLOAT16 = 2 } attngen_dtype;

typedef struct attngen_tensor {
    void *data;
    attngen_dtype dtype;
    int32_t rank;
    int64_t shape[ATTNGEN_MAX_RANK];
    int64_t strides[ATTNGEN_MAX_RANK]; /* in elements; all zero = contiguous row-major */
} attngen_tensor;

typedef enum attngen_scheme {
    ATTNGEN_SCHEME_SDPA = 0,    /* plain scaled dot-product attention */
    ATTNGEN_SCHEME_ALIBI = 1,   /* linear bias -slope_h * (p_i - j) */
    ATTNGEN_SCHEME_T5 = 2,      /* bucketed relative bias, no scaling */
    ATTNGEN_SCHEME_SHAW = 3,    /* relative key and value tables, clip distance K */
    ATTNGEN_SCHEME_TXL = 4,     /* Transformer-XL / XLNet: u, v, projected relative embeddings R */
    ATTNGEN_SCHEME_DEBERTA = 5, /* disentangled c2p + p2c, 1/sqrt(3D) */
    ATTNGEN_SCHEME_ROPE = 6,    /* rotary: NeoX/Llama half or GPT-J interleaved pairing */
    ATTNGEN_SCHEME_XPOS = 7     /* rotary with exponential decay */
} attngen_scheme;

typedef enum attngen_mask {
    ATTNGEN_MASK_NONE = 0,
    ATTNGEN_MASK_CAUSAL = 1,        /* key j allowed iff j <= p_i, p_i = k_len - q_len + i */
    ATTNGEN_MASK_SLIDING_WINDOW = 2 /* causal and p_i - j < window */
} attngen_mask;

typedef enum attngen_device {
    ATTNGEN_DEVICE_AUTO = 0, /* GPU when its runtime finds a device, else CPU */
    ATTNGEN_DEVICE_CPU = 1,
    ATTNGEN_DEVICE_OPENCL = 2,
    ATTNGEN_DEVICE_CUDA = 3
} attngen_device;

typedef enum attngen_rope_pairing {
    ATTNGEN_ROPE_HALF = 0,       /* Llama / GPT-NeoX rotate_half: c pairs with c + rot_dim/2 */
    ATTNGEN_ROPE_INTERLEAVED = 1 /* GPT-J rotate_every_two: 2i pairs with 2i+1 */
} attngen_rope_pairing;

typedef enum attngen_rope_scaling_type {
    ATTNGEN_ROPE_SCALING_NONE = 0,
    ATTNGEN_ROPE_SCALING_LINEAR = 1,      /* angle = (p / factor) theta */
    ATTNGEN_ROPE_SCALING_DYNAMIC_NTK = 2, /* base grows when seq_len > max_position_embeddings */
    ATTNGEN_ROPE_SCALING_LLAMA3 = 3,      /* piecewise by wavelength */
    ATTNGEN_ROPE_SCALING_YARN = 4         /* NTK-by-parts + attention factor */
} attngen_rope_scaling_type;

typedef struct attngen_rope_params {
    attngen_rope_pairing pairing;
    int32_t rot_dim; /* rotated channels (even, <= head_dim); 0 = head_dim */
    double base;     /* theta; default 10000 */
    attngen_rope_scaling_type scaling;
    double factor;
    double low_freq_factor, high_freq_factor; /* llama3 */
    int32_t original_max_position_embeddings; /* llama3, yarn */
    int32_t max_position_embeddings;          /* dynamic NTK */
    double beta_fast, beta_slow;              /* yarn; 0 = defaults 32, 1 */
    double attention_factor;                  /* yarn; 0 = default 0.1 ln(factor) + 1 */
    attngen_tensor inv_freq;                  /* optional [rot_dim/2] float32: overrides base/scaling */
} attngen_rope_params;

typedef struct attngen_attention_desc {
    attngen_scheme scheme;
    attngen_mask mask;
    int32_t window; /* sliding window size in keys (mask == SLIDING_WINDOW) */
    float scale;    /* 0 = scheme default: 1/sqrt(D); T5 1; DeBERTa 1/sqrt(3D) */
    attngen_device device;
    attngen_tensor kv_lengths; /* optional [batch] int32: keys j >= kv_lengths[b] are masked */

    /* position ids, optional (RoPE, xPos): [batch, q_len] and [batch, k_len] int32;
       default p_i = k_len - q_len + i for queries and j for keys */
    attngen_tensor q_positions, k_positions;

    /* ALiBi: slopes [heads] float32, optional (default: the paper's rule for any head count) */
    attngen_tensor alibi_slopes;
    int32_t alibi_symmetric; /* 1: -slope * |p_i - j| (bidirectional encoders) */

    /* T5: table [num_buckets, heads] float32 (num_buckets even >= 2) */
    attngen_tensor t5_table;
    int32_t t5_bidirectional; /* 1: encoder, 0: decoder */
    int32_t t5_max_distance;  /* default 128 */

    /* Tables marked (*) follow q's element type: with bfloat16 q, k, v they are bfloat16 (float32 is
       accepted and rounded to bfloat16 on every call, a pass over the table). Other tables are float32. */

    /* Shaw: keys (*) and values [2K+1, head_dim], values float32 and optional (no value term) */
    attngen_tensor shaw_keys, shaw_values;

    /* Transformer-XL: r [heads, k_len, head_dim] (*), u and v [heads, head_dim] float32 */
    attngen_tensor txl_r, txl_u, txl_v;

    /* DeBERTa: pos_key, pos_query [heads, 2*span, head_dim] (*) */
    attngen_tensor deberta_pos_key, deberta_pos_query;
    int32_t deberta_bucket_size;  /* position_buckets; 0 = no log buckets */
    int32_t deberta_max_position; /* max_relative_positions (log buckets) */

    attngen_rope_params rope;

    /* xPos */
    double xpos_scale_base; /* default 512 */
    int32_t xpos_centre_set;
    int32_t xpos_centre; /* default floor(-k_len / 2) */

    /* RoPE, xPos: 1 = k already holds transformed keys, as a KV cache filled once by attngen_rope or
       attngen_xpos (downscale 1) at the keys' positions; each call then transforms only the queries
       and runs plain attention, so decode does not re-rotate the whole cache. xPos needs
       xpos_centre_set: the default centre moves with k_len, and q and k must share one. float32, or
       bfloat16 (a cache filled by the bfloat16 transforms; the queries are rounded to bfloat16 too). */
    int32_t keys_rotated;
} attngen_attention_desc;

/* What a call ran, for logs and benchmarks. */
typedef struct attngen_run_info {
    char kernel[96];      /* generated kernel, e.g. attngen_rope_half_prefill_cpu */
    char device[16];      /* cpu, opencl, cuda */
    char cpu_target[160]; /* Halide target of the CPU variant dispatched to */
} attngen_run_info;

/* Fills a descriptor with defaults: SDPA, no mask, default scale, automatic device. */
void attngen_attention_desc_init(attngen_attention_desc *desc);

/* out [B,H,Lq,D] = attention(q [B,H,Lq,D], k [B,Hkv,Lk,D], v [B,Hkv,Lk,D]) with desc's scheme.
 * q, k, v and out are all float32, or all bfloat16 (CPU). `info` and `error` may be NULL. */
attngen_status attngen_attention(const attngen_tensor *q, const attngen_tensor *k, const attngen_tensor *v,
                                 const attngen_tensor *out, const attngen_attention_desc *desc, attngen_run_info *info,
                                 char *error, size_t error_size);

/* User-defined schemes (a new file in generators/schemes/): inputs by the names the scheme declares.
 * Integral scalars are passed to int32 inputs, all scalars to float32 inputs. `desc` supplies the
 * mask, window, scale, device and kv_lengths; its scheme fields are ignored. */
typedef struct attngen_named_tensor {
    const char *name;
    attngen_tensor tensor;
} attngen_named_tensor;

typedef struct attngen_named_scalar {
    const char *name;
    double value;
} attngen_named_scalar;

attngen_status attngen_attention_custom(const char *scheme, const char *options, const attngen_tensor *q,
                                        const attngen_tensor *k, const attngen_tensor *v, const attngen_tensor *out,
                                        const attngen_attention_desc *desc, const attngen_named_tensor *tensors,
                                        int32_t tensor_count, const attngen_named_scalar *scalars, int32_t scalar_count,
                                        attngen_run_info *info, char *error, size_t error_size);

/* Standalone positional kernels (CPU). rope and xpos take x and out in float32, or both in bfloat16
   (computed in float32, rounded to nearest even). */
/* x_out = rope(x) for x [B,H,L,D]; positions [B,L] int32 optional (default 0..L-1). */
attngen_status attngen_rope(const attngen_tensor *x, const attngen_tensor *positions, const attngen_rope_params *rope,
                            int32_t seq_len_hint, const attngen_tensor *out, char *error, size_t error_size);
/* xPos on x [B,H,L,D] at positions (default offset..offset+L-1); keys use downscale = 1. */
attngen_status attngen_xpos(const attngen_tensor *x, const attngen_tensor *positions, double scale_base, int32_t centre,
                            int32_t downscale, const attngen_tensor *out, char *error, size_t error_size);

typedef enum attngen_sinusoid_convention {
    ATTNGEN_SINUSOID_PAPER = 0, /* pytorch examples: interleaved sin/cos, 10000^(-2i/d); even d only */
    ATTNGEN_SINUSOID_T2T = 1,   /* tensor2tensor: [sin | cos], 10000^(-i/(d/2-1)), zero column if d odd */
    ATTNGEN_SINUSOID_TXL = 2    /* Transformer-XL: [sin | cos], 10000^(-2i/d), 2*ceil(d/2) columns */
} attngen_sinusoid_convention;

/* Columns of a table of `channels` channels in a convention (TXL: 2*ceil(d/2)). */
int32_t attngen_sinusoid_columns(attngen_sinusoid_convention convention, int32_t channels);
/* out [length, columns] float32 for positions offset .. offset+length-1. */
attngen_status attngen_sinusoid_table(attngen_sinusoid_convention convention, int32_t channels, int32_t position_offset,
                                      double base, const attngen_tensor *out, char *error, size_t error_size);
/* out = x + sinusoid[positions] for x [B,L,C]; positions [B,L] int32 optional (default 0..L-1). */
attngen_status attngen_add_sinusoid(const attngen_tensor *x, const attngen_tensor *positions,
                                    attngen_sinusoid_convention convention, double base, const attngen_tensor *out,
                                    char *error, size_t error_size);
/* out = x + table[positions + offset] for x [B,L,C], table [max_positions, C]; bounds-checked. */
attngen_status attngen_add_learned(const attngen_tensor *x, const attngen_tensor *positions, int32_t position_offset,
                                   const attngen_tensor *table, const attngen_tensor *out, char *error,
                                   size_t error_size);

/* Positional functions (plain C++, exactly the references' arithmetic). */
/* ALiBi slopes for any head count (the paper's rule for non-powers of two), double precision. */
attngen_status attngen_alibi_slopes(int32_t heads, double *slopes, char *error, size_t error_size);
/* T5 bucket of relative position j - i. */
attngen_status attngen_t5_bucket(int32_t relative_position, int32_t bidirectional, int32_t num_buckets,
                                 int32_t max_distance, int32_t *bucket, char *error, size_t error_size);
/* DeBERTa log bucket of relative position i - j. */
attngen_status attngen_deberta_bucket(int32_t relative_position, int32_t bucket_size, int32_t max_position,
                                      int32_t *bucket, char *error, size_t error_size);
/* RoPE inverse frequencies [rot_dim/2] after scaling; seq_len matters for dynamic NTK only.
 * attention_factor (may be NULL) receives the cos/sin multiplier (YaRN; 1 otherwise). */
attngen_status attngen_rope_inv_freq(const attngen_rope_params *rope, int32_t head_dim, int32_t seq_len,
                                     float *inv_freq, double *attention_factor, char *error, size_t error_size);

/* The name of a built-in scheme as kernels, attngen_attention_custom and reports know it ("sdpa",
 * "rope", ...); NULL for a value that is not a scheme. */
const char *attngen_scheme_name(attngen_scheme scheme);
/* Memory for tensors (optional: any buffer works). Blocks start on a 64-byte cache line; blocks of
 * 2 MiB or more start on a 2 MiB boundary and are advised as transparent huge pages (Linux), which
 * makes decode's pass over a large K/V cache up to ~10% faster where THP is in "madvise" mode. NULL for
 * 0 bytes or when the allocation fails. Free with attngen_free (NULL is ignored). */
void *attngen_alloc(size_t bytes);
void attngen_free(void *block);
/* Kernel temporaries are kept in a cache of freed blocks (up to 256 MiB) so that calls do not fault
 * the same pages in again; this frees the cached blocks and returns how many bytes it released. */
size_t attngen_release_cached_memory(void);
/* Kernels compiled into this build, one line each, for diagnostics: name, kind, scheme or op, options,
 * shape class, device, and head_dim=D for a kernel with a fast path for that head_dim only. */
const char *attngen_kernel_list(void);
/* Whether a device's runtime finds a usable device (GPU) in this process. */
int32_t attngen_device_available(attngen_device device);

#ifdef __cplusplus
}
#endif

#endif /* ATTNGEN_H */
