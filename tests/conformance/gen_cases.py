#!/usr/bin/env python3
"""Deterministic generator of *synthetic* conformance cases for attngen.

The files follow the format and the semantics of the conformance contract
(shared/conformance/README.md): one JSON file per case,
``{"meta": {...}, "tensors": {name: {dtype, shape, data}}}``, written to
``<out>/<scheme>/<case>.json``.

These cases are NOT output of the original reference implementations: every
value here is computed with numpy from the formulas of the contract.  Tensors
without suffix mimic the float32 arithmetic of the reference code (float32
storage, same operation order, float32 transcendental functions rounded from
float64); ``*_f64`` tensors are a float64 evaluation of the contract formulas
from the same float32 inputs.  They exist so that the C++ conformance runner
can be exercised on every scheme family; the public sample of real reference
output stays in shared/conformance/cases.

Usage:  /usr/bin/python3 tests/conformance/gen_cases.py [--out DIR]
Needs only Python 3 and numpy (Debian's python3-numpy).  Output is identical
from run to run.
"""

import argparse
import json
import math
import os
import sys
import zlib

import numpy as np

F32 = np.float32
F64 = np.float64
I64 = np.int64
BASE_SEED = 20240917
FINFO32_MIN = F32(np.finfo(np.float32).min)
INPUT_DECIMALS = 2

HERE = os.path.dirname(os.path.abspath(__file__))
DEFAULT_OUT = os.path.join(HERE, "cases")
GEN_PATH = "tests/conformance/gen_cases.py"
SYNTH_NOTE = (" (SYNTHETIC: numpy re-statement of the contract formulas, float32 reference arithmetic mimicked;"
              " not output of the reference implementation)")

TENSOR_FORMAT = (
    "tensors[name] = {dtype, shape, data}: data is the flat row-major (C-order) list; float32 values are "
    "written with the shortest decimal that round-trips to the same float32; *_f64 tensors are float64 "
    "(high-precision truth); int tensors are exact; no tensor contains inf/nan")

# ----------------------------------------------------------------------------------------------------------
# references named by the contract (the synthetic cases restate these code paths)
# ----------------------------------------------------------------------------------------------------------
C_TORCHSCALE = "microsoft/torchscale@4d1e0e82e5adf86dd424f1463192635b73fc8efc"
C_TXL = "kimiyoung/transformer-xl@44781ed21dbaec88b280f74d9ae2877f52b492a5"
C_DEBERTA = "microsoft/DeBERTa@4d7fe0bd4fb3c7d4f4005a7cafabde9800372098"
C_T2T = "tensorflow/tensor2tensor@bafdc1b67730430d38d6ab802cbd51f9d053ba2e"
C_ALIBI = "ofirpress/attention_with_linear_biases@4b92f28a005ead2567abe2359f633e73e08f3833"
C_PTEX = "pytorch/examples@77f55b912142e11fcfdf5b530231fb9c52f181e8"
C_HF_T5 = "huggingface/transformers@6b8b757dfcb582379a64f013cdce46c43629f2b0"
C_HF_LLAMA = "huggingface/transformers@002272831fba584eb30dca9729c1be456836960a"
C_HF_ROPE = "huggingface/transformers@0044e3b3facff1a1ad60b235c69d5b45beae75a4"
C_HF_GPTJ = "huggingface/transformers@00b676f8f0489b88652a31d70751cc540dd06305"
C_HF_NEOX = "huggingface/transformers@006bd23dd0ce18d54e1cf260b09b15fa943a731d"
C_HF_BLOOM = "huggingface/transformers@9d97831a1cbb420edac062c2e8454ce9ac1c4b79"

ATTN_LAYOUT = {
    "q": "[batch, heads, q_len, head_dim] row-major",
    "k, v": "[batch, kv_heads, k_len, head_dim] row-major",
    "probs": "[batch, heads, q_len, k_len] softmax weights (rows sum to 1)",
    "out": "[batch, heads, q_len, head_dim] = probs @ v, before any output projection / head merge",
    "mask_allowed": "[q_len, k_len] int, 1 = query i may attend key j",
    "positions": "query row i has absolute position k_len - q_len + i (bottom-right aligned) unless stated",
}
GQA_NOTE = "query head h reads kv head h // (heads/kv_heads) (repeat_kv = repeat_interleave on the head axis)"
MASK_CAUSAL = "causal: bottom-right aligned, query i at absolute position k_len - q_len + i"


# ----------------------------------------------------------------------------------------------------------
# float32 helpers: elementwise transcendental functions are evaluated in float64 and rounded to float32,
# i.e. (almost always) the correctly rounded float32 result, which is what torch's float32 kernels return
# in the vast majority of cases.
# ----------------------------------------------------------------------------------------------------------
def f32(x):
    return np.asarray(x, dtype=F32)


def exp32(x):
    return np.exp(np.asarray(x, F32).astype(F64)).astype(F32)


def log32(x):
    return np.log(np.asarray(x, F32).astype(F64)).astype(F32)


def sin32(x):
    return np.sin(np.asarray(x, F32).astype(F64)).astype(F32)


def cos32(x):
    return np.cos(np.asarray(x, F32).astype(F64)).astype(F32)


def pow32(b, e):
    return np.power(np.asarray(b, F32).astype(F64), np.asarray(e, F32).astype(F64)).astype(F32)


def recip32(x):
    return (F32(1.0) / np.asarray(x, F32)).astype(F32)


def sin64(x):
    return np.vectorize(math.sin, otypes=[F64])(np.asarray(x, F64))


def cos64(x):
    return np.vectorize(math.cos, otypes=[F64])(np.asarray(x, F64))


def maxdiff(a, b, where=None):
    a = np.asarray(a, F64)
    b = np.asarray(b, F64)
    d = np.abs(a - b)
    if where is not None:
        d = d[np.broadcast_to(where, d.shape)]
    return float(d.max()) if d.size else 0.0


def causal_allowed(q_len, k_len):
    p = (k_len - q_len) + np.arange(q_len)
    return np.arange(k_len)[None, :] <= p[:, None]


def softmax32(scores, allowed):
    """torch softmax on float32 rows: max, exp(x - max), sum, multiply by 1/sum; masked -> exactly 0."""
    s = np.where(allowed, np.asarray(scores, F32), F32(-np.inf)).astype(F32)
    m = s.max(axis=-1, keepdims=True)
    e = exp32(s - m)
    tot = e.sum(axis=-1, keepdims=True, dtype=F32)
    return (e * recip32(tot)).astype(F32)


def softmax64(scores, allowed):
    s = np.where(allowed, np.asarray(scores, F64), -np.inf)
    m = s.max(axis=-1, keepdims=True)
    e = np.exp(s - m)
    return e / e.sum(axis=-1, keepdims=True)


def expand_kv(x, heads):
    """[B, KV, L, D] -> [B, H, L, D] with head h reading kv head h // (H/KV) (repeat_interleave)."""
    return np.repeat(x, heads // x.shape[1], axis=1)


def mm32(a, b):
    return np.matmul(np.asarray(a, F32), np.asarray(b, F32)).astype(F32)


# ----------------------------------------------------------------------------------------------------------
# case container and writer
# ----------------------------------------------------------------------------------------------------------
class Case:
    def __init__(self, scheme, case):
        self.scheme = scheme
        self.case = case
        self.tensors = []
        self.meta = None
        key = zlib.crc32(("%s/%s" % (scheme, case)).encode("ascii"))
        self.rng = np.random.default_rng([BASE_SEED, key])

    def randn(self, shape, std=1.0, decimals=INPUT_DECIMALS):
        """N(0, std^2) float32 values; stored inputs are rounded to `decimals` decimal places so that their
        shortest decimal form is short (keeps the files small; the values are exact float32 inputs)."""
        x = std * self.rng.standard_normal(shape)
        if decimals is not None:
            x = np.round(x, decimals)
        return x.astype(F32)

    def add(self, name, arr, dtype=None):
        arr = np.asarray(arr)
        if dtype is None:
            if arr.dtype == np.bool_ or np.issubdtype(arr.dtype, np.integer):
                dtype = "int64"
            elif arr.dtype == F64:
                dtype = "float64"
            else:
                dtype = "float32"
        if dtype == "float32":
            arr = arr.astype(F32)
        elif dtype == "float64":
            arr = arr.astype(F64)
        else:
            arr = arr.astype(I64)
        if dtype != "int64" and not np.all(np.isfinite(arr)):
            raise AssertionError("%s/%s: tensor %s has non-finite values" % (self.scheme, self.case, name))
        assert all(n != name for n, _, _ in self.tensors), name
        self.tensors.append((name, dtype, arr))
        return arr

    def finish(self, reference, layout, semantics, checks, shapes=None, params=None, dtype_note=None,
               tolerance_note=None, reference_error=None, gen=None, limits=None):
        meta = {"scheme": self.scheme, "case": self.case, "reference": reference}
        if shapes is not None:
            meta["shapes"] = shapes
        if params is not None:
            meta["params"] = params
        meta["layout"] = layout
        meta["semantics"] = semantics
        meta["checks"] = checks
        if dtype_note is not None:
            meta["dtype_note"] = dtype_note
        if tolerance_note is not None:
            meta["tolerance_note"] = tolerance_note
        if reference_error is not None:
            meta["reference_error"] = reference_error
        meta["tensor_format"] = TENSOR_FORMAT
        meta["generator"] = "%s:%s%s" % (GEN_PATH, gen or ("gen_" + self.scheme), SYNTH_NOTE)
        # every check must pass its threshold; limits: {check_name: threshold}, default 1e-5
        limits = limits or {}
        for k, v in checks.items():
            if isinstance(v, bool) or not isinstance(v, (int, float)):
                continue
            lim = limits.get(k, 1e-5)
            if not (v <= lim):
                raise AssertionError("%s/%s: check %s = %g exceeds %g" % (self.scheme, self.case, k, v, lim))
        self.meta = meta
        return self


def fmt_data(arr, dtype):
    flat = arr.reshape(-1)
    if dtype == "float32":
        return ",".join(repr(x) for x in flat)           # numpy float32 repr = shortest round-trip decimal
    if dtype == "float64":
        return ",".join(repr(float(x)) for x in flat.tolist())
    return ",".join(str(int(x)) for x in flat.tolist())


def write_case(c, out_dir):
    d = os.path.join(out_dir, c.scheme)
    os.makedirs(d, exist_ok=True)
    path = os.path.join(d, c.case + ".json")
    lines = []
    for name, dtype, arr in c.tensors:
        lines.append('%s: {"dtype": "%s", "shape": %s, "data": [%s]}'
                     % (json.dumps(name), dtype, json.dumps([int(s) for s in arr.shape]), fmt_data(arr, dtype)))
    text = '{\n"meta": ' + json.dumps(c.meta, indent=1) + ',\n"tensors": {\n' + ",\n".join(lines)
    text += ("\n" if lines else "") + "}\n}\n"
    with open(path, "w", encoding="ascii") as f:
        f.write(text)
    return path, len(text)


def attn_shapes(B, H, KV, Lq, Lk, D, with_kv=True):
    s = {"batch": B, "heads": H}
    if with_kv:
        s["kv_heads"] = KV
    s.update({"q_len": Lq, "k_len": Lk, "head_dim": D})
    return s


# ----------------------------------------------------------------------------------------------------------
# (a) sinusoidal tables
# ----------------------------------------------------------------------------------------------------------
def pt_examples_pe(L, d, dt):
    if d % 2:
        raise RuntimeError("The expanded size of the tensor (%d) must match the existing size (%d) at "
                           "non-singleton dimension 1.  Target sizes: [%d, %d].  Tensor sizes: [%d, %d]"
                           % (d // 2, (d + 1) // 2, L, d // 2, L, (d + 1) // 2))
    if dt == F32:
        position = np.arange(L, dtype=F32)[:, None]
        div_term = exp32(np.arange(0, d, 2).astype(F32) * F32(-math.log(10000.0) / d))
        ang = (position * div_term).astype(F32)
        s, c = sin32(ang), cos32(ang)
    else:
        position = np.arange(L, dtype=F64)[:, None]
        div_term = np.exp(np.arange(0, d, 2).astype(F64) * (-math.log(10000.0) / d))
        ang = position * div_term
        s, c = sin64(ang), cos64(ang)
    pe = np.zeros((L, d), dt)
    pe[:, 0::2] = s
    pe[:, 1::2] = c
    return pe


def t2t_timing_signal(length, channels, dt, min_timescale=1.0, max_timescale=1.0e4, start_index=0):
    n = channels // 2
    if dt == F32:
        position = np.arange(length).astype(F32) + F32(start_index)
        inc = (F32(math.log(float(max_timescale) / float(min_timescale))) / max(F32(n) - F32(1), F32(1))).astype(F32)
        inv = (F32(min_timescale) * exp32(np.arange(n).astype(F32) * -inc)).astype(F32)
        st = (position[:, None] * inv[None, :]).astype(F32)
        sig = np.concatenate([sin32(st), cos32(st)], axis=1)
    else:
        position = np.arange(length).astype(F64) + start_index
        inc = math.log(float(max_timescale) / float(min_timescale)) / max(float(n) - 1.0, 1.0)
        inv = min_timescale * np.exp(np.arange(n).astype(F64) * -inc)
        st = position[:, None] * inv[None, :]
        sig = np.concatenate([sin64(st), cos64(st)], axis=1)
    if channels % 2:
        sig = np.concatenate([sig, np.zeros((length, 1), dt)], axis=1)
    return sig.astype(dt)


def txl_inv_freq(demb, dt):
    if dt == F32:
        return recip32(pow32(F32(10000.0), (np.arange(0.0, demb, 2.0).astype(F32) / F32(demb)).astype(F32)))
    return 1.0 / (10000.0 ** (np.arange(0.0, demb, 2.0) / demb))


def txl_pos_emb(pos_seq, demb, dt):
    inv = txl_inv_freq(demb, dt)
    if dt == F32:
        x = np.outer(np.asarray(pos_seq, F32), inv).astype(F32)
        return np.concatenate([sin32(x), cos32(x)], axis=1)
    x = np.outer(np.asarray(pos_seq, F64), inv)
    return np.concatenate([sin64(x), cos64(x)], axis=1)


def gen_sinusoidal():
    out = []
    for L, d in [(16, 8), (50, 128), (7, 5)]:
        # pytorch/examples
        c = Case("sinusoidal", "pt_examples_L%d_D%d" % (L, d))
        ref = [C_PTEX + ":word_language_model/model.py:PositionalEncoding.__init__ (buffer pe)"]
        params = {"max_len": L, "d_model": d, "base": 10000.0}
        layout = {"pe": "[max_len, d_model]; pe[pos, 2i] = sin(pos * w_i), pe[pos, 2i+1] = cos(pos * w_i), "
                        "w_i = exp(2i * -ln(10000)/d_model) (= 10000^(-2i/d_model)); pos = 0..max_len-1"}
        try:
            pe = pt_examples_pe(L, d, F32)
            pe64 = pt_examples_pe(L, d, F64)
        except RuntimeError as e:
            out.append(c.finish(ref, {"pe": "not produced: the reference raises for odd d_model"},
                                "pytorch/examples PositionalEncoding assigns cos(...) with ceil(d/2) columns into "
                                "pe[:, 1::2] (floor(d/2) columns): odd d_model raises RuntimeError, no tensors.",
                                {}, params=params, reference_error="RuntimeError: " + str(e)))
            continue
        c.add("pe", pe, "float32")
        c.add("pe_f64", pe64, "float64")
        out.append(c.finish(ref, layout, "pe[pos, 2i] = sin(pos*w_i), pe[pos, 2i+1] = cos(pos*w_i), "
                                         "w_i = 10000^(-2i/d_model)",
                            {"max_abs_diff_pe_f32_vs_f64_formula": maxdiff(pe, pe64)}, params=params,
                            dtype_note="reference hard-codes float32 (torch.float / .float()); pe_f64 is our "
                                       "float64 evaluation of the same formula"))
    for L, d in [(16, 8), (50, 128), (7, 5)]:
        c = Case("sinusoidal", "t2t_timing_signal_L%d_D%d" % (L, d))
        s32 = c.add("signal", t2t_timing_signal(L, d, F32), "float32")
        s64 = c.add("signal_f64", t2t_timing_signal(L, d, F64), "float64")
        n = d // 2
        out.append(c.finish(
            [C_T2T + ":tensor2tensor/layers/common_attention.py:get_timing_signal_1d"],
            {"signal": "[length, channels] (the reference's [1, length, channels] without the batch axis); "
                       "signal[p, i] = sin(p*r_i), signal[p, n+i] = cos(p*r_i), n = channels//2, "
                       "r_i = exp(-i*ln(1e4)/max(n-1, 1)); odd channels: last column is 0"},
            "concatenated [sin | cos] timing signal with r_i = 10000^(-i/(n-1)) (denominator n-1), start_index 0",
            {"max_abs_diff_signal_f32_vs_f64": maxdiff(s32, s64)},
            params={"max_len": L, "d_model": d, "length": L, "channels": d, "num_timescales": n,
                    "min_timescale": 1.0, "max_timescale": 10000.0, "start_index": 0},
            dtype_note="signal: float32 (TF float32 ops); signal_f64: the same formula in float64"))
    for L, d in [(16, 8), (50, 128), (7, 5)]:
        c = Case("sinusoidal", "txl_posemb_L%d_D%d" % (L, d))
        pos = np.arange(L)
        p32 = c.add("pos_emb", txl_pos_emb(pos, d, F32), "float32")
        p64 = c.add("pos_emb_f64", txl_pos_emb(pos, d, F64), "float64")
        cols = 2 * ((d + 1) // 2)
        out.append(c.finish(
            [C_TXL + ":pytorch/mem_transformer.py:PositionalEmbedding"],
            {"pos_emb": "[max_len, 2*ceil(d_model/2)] (= [%d, %d]); row p = [sin(p f_0..) | cos(p f_0..)], "
                        "f_i = 10000^(-2i/d_model), pos_seq = 0..max_len-1 ascending (the module's "
                        "[len, 1, demb] output without the batch axis)" % (L, cols)},
            "Transformer-XL sinusoid: [sin | cos] with the paper's frequencies; odd d_model gives d_model+1 columns",
            {"max_abs_diff_pos_emb_f32_vs_f64": maxdiff(p32, p64)},
            params={"max_len": L, "d_model": d, "base": 10000.0, "pos_seq": "ascending 0..max_len-1",
                    "columns": cols},
            dtype_note="pos_emb: float32 module; pos_emb_f64: the same formula in float64"))
    return out


# ----------------------------------------------------------------------------------------------------------
# (b) ALiBi
# ----------------------------------------------------------------------------------------------------------
def get_slopes(n):
    """ALiBi authors' get_slopes (fairseq TransformerDecoder.__init__), python doubles."""
    def get_slopes_power_of_2(n):
        start = (2 ** (-2 ** -(math.log2(n) - 3)))
        ratio = start
        return [start * ratio ** i for i in range(n)]

    if math.log2(n).is_integer():
        return get_slopes_power_of_2(n)
    closest_power_of_2 = 2 ** math.floor(math.log2(n))
    return get_slopes_power_of_2(closest_power_of_2) + get_slopes(2 * closest_power_of_2)[0::2][:n - closest_power_of_2]


def bloom_slopes_f32(num_heads):
    """transformers BloomModel build_alibi_tensor slopes (float32 torch.pow of a float32 base)."""
    cp2 = 2 ** math.floor(math.log2(num_heads))
    base = F32(2 ** (-(2 ** -(math.log2(cp2) - 3))))
    slopes = pow32(base, np.arange(1, 1 + cp2).astype(F32))
    if cp2 != num_heads:
        extra_base = F32(2 ** (-(2 ** -(math.log2(2 * cp2) - 3))))
        nrem = min(cp2, num_heads - cp2)
        slopes = np.concatenate([slopes, pow32(extra_base, np.arange(1, 1 + 2 * nrem, 2).astype(F32))])
    return slopes.astype(F32)


def bloom_alibi(batch, heads, k_len):
    """build_alibi_tensor with an all-ones attention mask: [batch*heads, 1, k_len] = slope_h * j (float32)."""
    slopes = bloom_slopes_f32(heads)
    ar = np.arange(k_len).astype(F32)
    al = (slopes[:, None] * ar[None, :]).astype(F32)            # [heads, k_len]
    return np.broadcast_to(al[None], (batch, heads, k_len)).reshape(batch * heads, 1, k_len).copy()


def alibi_bloom_path(q, k, v, allowed):
    """BloomAttention.forward math: alibi.baddbmm(q, k^T, beta=1, alpha=1/sqrt(d)); finfo.min mask; softmax fp32."""
    B, H, Lq, D = q.shape
    Lk = k.shape[2]
    al = bloom_alibi(B, H, Lk).reshape(B, H, 1, Lk)
    inv_norm = F32(1.0 / math.sqrt(D))
    sc = (al + (inv_norm * mm32(q, np.swapaxes(k, -1, -2))).astype(F32)).astype(F32)
    sc = np.where(allowed, sc, FINFO32_MIN).astype(F32)
    probs = softmax32(sc, allowed)
    return probs, mm32(probs, v)


def gen_alibi():
    out = []
    # slopes
    c = Case("alibi", "slopes")
    checks = {}
    layout = {
        "slopes_hN_f64": "[N] slopes for head h = 0..N-1 from get_slopes(N) (python double precision)",
        "slopes_hN_f32": "[N] torch.Tensor(get_slopes(N)) (float32, as stored by the ALiBi fairseq decoder)",
        "slopes_hN_bloom_f32": "[N] slopes produced inside BLOOM build_alibi_tensor (float32 torch.pow)",
    }
    for n in [8, 12, 16, 6, 20]:
        s64 = np.array(get_slopes(n), F64)
        # independent formula: powers 2^(-8(h+1)/c) then odd powers 2^(-8(2m+1)/(2c))
        cp2 = 2 ** math.floor(math.log2(n))
        formula = [2.0 ** (-8.0 * (h + 1) / cp2) for h in range(cp2)]
        formula += [2.0 ** (-8.0 * (2 * m + 1) / (2 * cp2)) for m in range(n - cp2)]
        c.add("slopes_h%d_f64" % n, s64, "float64")
        c.add("slopes_h%d_f32" % n, s64.astype(F32), "float32")
        sb = c.add("slopes_h%d_bloom_f32" % n, bloom_slopes_f32(n), "float32")
        checks["n%d_ref_f64_vs_our_formula" % n] = maxdiff(s64, formula)
        checks["n%d_bloom_f32_vs_ref_f64" % n] = maxdiff(sb, s64)
    out.append(c.finish(
        [C_ALIBI + ":fairseq/models/transformer.py:TransformerDecoder.__init__.get_slopes",
         C_HF_BLOOM + ":src/transformers/models/bloom/modeling_bloom.py:build_alibi_tensor"],
        layout,
        "power of two N: slope_h = 2^(-8(h+1)/N). Otherwise with c = 2^floor(log2 N): slopes(c) followed by "
        "slopes(2c)[0::2][:N-c] (i.e. the odd powers 2^(-8(2m+1)/(2c)), m = 0..N-c-1). Head order: index h in "
        "the returned list = attention head h.",
        checks, params={"heads": [8, 12, 16, 6, 20]},
        limits={k: 1e-7 for k in checks},
        dtype_note="slopes_hN_bloom_f32: float32 pow evaluated as the correctly rounded float32 of the exact "
                   "power; torch's vectorised powf can differ by 1 ulp on some entries"))

    # causal fairseq cases
    for B, H, L, D in [(2, 8, 9, 16), (1, 6, 33, 8), (1, 12, 7, 32)]:
        c = Case("alibi", "causal_fairseq_B%d_H%d_L%d_D%d" % (B, H, L, D))
        q = c.add("q", c.randn((B, H, L, D)))
        k = c.add("k", c.randn((B, H, L, D)))
        v = c.add("v", c.randn((B, H, L, D)))
        s64 = np.array(get_slopes(H), F64)
        c.add("slopes_f64", s64, "float64")
        allowed = causal_allowed(L, L)
        c.add("mask_allowed", allowed.astype(I64))
        s32 = s64.astype(F32)
        j = np.arange(L)
        i = np.arange(L)
        bias_ref = (s32[:, None, None] * j[None, None, :].astype(F32)).astype(F32)
        bias_ref = np.broadcast_to(bias_ref, (H, L, L))
        c.add("alibi_bias_ref", np.where(allowed[None], bias_ref, F32(0)), "float32")
        rel = -(s64[:, None, None] * (i[:, None] - j[None, :]).astype(F64)[None])
        c.add("alibi_bias_rel", np.where(allowed[None], rel, 0.0), "float64")
        # fairseq path: q *= d^-0.5; bmm; + (triu(-inf, 1) + slope*j); softmax fp32; bmm
        qs = (q * F32(D ** -0.5)).astype(F32)
        sc = (mm32(qs, np.swapaxes(k, -1, -2)) + bias_ref[None]).astype(F32)
        probs = c.add("probs", softmax32(sc, allowed))
        o = c.add("out", mm32(probs, v))
        pb, ob = alibi_bloom_path(q, k, v, allowed)
        c.add("probs_bloom", pb)
        c.add("out_bloom", ob)
        sc64 = np.matmul(q.astype(F64), np.swapaxes(k, -1, -2).astype(F64)) / math.sqrt(D) + rel[None]
        p64 = c.add("probs_f64", softmax64(sc64, allowed), "float64")
        o64 = c.add("out_f64", np.matmul(p64, v.astype(F64)), "float64")
        lay = dict(ATTN_LAYOUT)
        lay["alibi_bias_ref"] = ("[heads, q_len, k_len] finite part of the fairseq mask: slope_h * j (same value "
                                 "for every row i; masked entries j > i hold -inf in the reference and are "
                                 "omitted here)")
        lay["alibi_bias_rel"] = ("[heads, q_len, k_len] -slope_h * (i - j) (the paper's form); differs from "
                                 "alibi_bias_ref by a per-row constant, so probs/out are identical")
        lay["slopes_f64"] = "[heads] get_slopes(heads)"
        lay["probs_bloom, out_bloom"] = "same layouts as probs/out, BLOOM path"
        out.append(c.finish(
            [C_ALIBI + ":fairseq/models/transformer.py:TransformerDecoder.__init__ (alibi buffer) + "
                       "TransformerDecoder.buffered_future_mask",
             C_ALIBI + ":fairseq/modules/multihead_attention.py:MultiheadAttention.forward math (q*=scaling; "
                       "bmm; +attn_mask; softmax fp32)",
             C_HF_BLOOM + ":src/transformers/models/bloom/modeling_bloom.py:build_alibi_tensor + "
                          "BloomAttention.forward (alibi.baddbmm, softmax fp32) -> probs_bloom/out_bloom"],
            lay,
            "score[b,h,i,j] = q_i.k_j / sqrt(D) + bias[h,i,j] for j <= i, masked otherwise; softmax over j. "
            "Either bias form gives the same probs.",
            {"probs_fairseq_vs_bloom": maxdiff(probs, pb), "out_fairseq_vs_bloom": maxdiff(o, ob),
             "probs_f32_vs_f64": maxdiff(probs, p64), "out_f32_vs_f64": maxdiff(o, o64)},
            shapes={"batch": B, "heads": H, "q_len": L, "k_len": L, "head_dim": D},
            params={"causal": True, "scale": "1/sqrt(head_dim)", "slopes": "get_slopes(heads)"}))

    for B, H, Lk, D in [(2, 8, 17, 16), (1, 20, 33, 8)]:
        c = Case("alibi", "decode_bloom_B%d_H%d_q1_k%d_D%d" % (B, H, Lk, D))
        q = c.add("q", c.randn((B, H, 1, D)))
        k = c.add("k", c.randn((B, H, Lk, D)))
        v = c.add("v", c.randn((B, H, Lk, D)))
        s64 = np.array(get_slopes(H), F64)
        c.add("slopes_f64", s64, "float64")
        allowed = causal_allowed(1, Lk)
        c.add("mask_allowed", allowed.astype(I64))
        c.add("alibi", bloom_alibi(B, H, Lk), "float32")
        probs, o = alibi_bloom_path(q, k, v, allowed)
        c.add("probs", probs)
        c.add("out", o)
        j = np.arange(Lk).astype(F64)
        sc64 = (np.matmul(q.astype(F64), np.swapaxes(k, -1, -2).astype(F64)) / math.sqrt(D)
                + s64[None, :, None, None] * j[None, None, None, :])
        p64 = c.add("probs_f64", softmax64(sc64, allowed), "float64")
        o64 = c.add("out_f64", np.matmul(p64, v.astype(F64)), "float64")
        lay = dict(ATTN_LAYOUT)
        lay["alibi"] = ("[batch*heads, 1, k_len] as returned by build_alibi_tensor: alibi[b*heads+h, 0, j] = "
                        "slope_h * j (float32 BLOOM slopes)")
        lay["slopes_f64"] = "[heads] get_slopes(heads)"
        out.append(c.finish(
            [C_HF_BLOOM + ":src/transformers/models/bloom/modeling_bloom.py:build_alibi_tensor + "
                          "BloomAttention.forward (alibi.baddbmm(q, k^T, beta=1, alpha=1/sqrt(d)), finfo.min mask, "
                          "softmax fp32)"],
            lay,
            "one query at absolute position k_len-1: score[b,h,0,j] = q.k_j / sqrt(D) + slope_h * j "
            "(= -slope_h*(k_len-1-j) + const), all keys allowed; softmax over j",
            {"probs_f32_vs_f64": maxdiff(probs, p64), "out_f32_vs_f64": maxdiff(o, o64),
             "slopes_bloom_f32_vs_f64": maxdiff(bloom_slopes_f32(H), s64)},
            shapes={"batch": B, "heads": H, "q_len": 1, "k_len": Lk, "head_dim": D},
            params={"causal": True, "scale": "1/sqrt(head_dim)", "slopes": "build_alibi_tensor (BLOOM)",
                    "query_position": Lk - 1},
            limits={"slopes_bloom_f32_vs_f64": 1e-7},
            dtype_note="probs_f64/out_f64: float64 evaluation with the python-double get_slopes slopes"))
    return out


# ----------------------------------------------------------------------------------------------------------
# (c) T5
# ----------------------------------------------------------------------------------------------------------
def t5_bucket(relative_position, bidirectional=True, num_buckets=32, max_distance=128, dt=F32):
    """T5Attention._relative_position_bucket; dt=F32 mirrors relative_position.float() (float32 log)."""
    rp = np.asarray(relative_position, I64)
    buckets = np.zeros_like(rp)
    if bidirectional:
        num_buckets //= 2
        buckets = buckets + (rp > 0).astype(I64) * num_buckets
        rp = np.abs(rp)
    else:
        rp = -np.minimum(rp, np.zeros_like(rp))
    max_exact = num_buckets // 2
    is_small = rp < max_exact
    safe = np.maximum(rp, 1)
    if dt == F32:
        x = (safe.astype(F32) / F32(max_exact)).astype(F32)
        val = (log32(x) / F32(math.log(max_distance / max_exact))).astype(F32)
        val = (val * F32(num_buckets - max_exact)).astype(F32)
    else:
        val = np.log(safe.astype(F64) / max_exact) / math.log(max_distance / max_exact) * (num_buckets - max_exact)
    large = max_exact + np.trunc(val).astype(I64)
    large = np.minimum(large, np.full_like(large, num_buckets - 1))
    return buckets + np.where(is_small, rp, large)


def gen_t5():
    out = []
    ref_bucket = C_HF_T5 + ":src/transformers/models/t5/modeling_t5.py:T5Attention._relative_position_bucket"
    c = Case("t5", "relative_position_bucket_nb32_md128")
    rel = np.arange(-300, 301).astype(I64)
    c.add("relative_position", rel)
    bb = c.add("bucket_bidirectional", t5_bucket(rel, True, 32, 128))
    bu = c.add("bucket_unidirectional", t5_bucket(rel, False, 32, 128))
    out.append(c.finish(
        [ref_bucket],
        {"relative_position": "[601] int, j - i (memory_position - context_position) = -300..300",
         "bucket_bidirectional": "[601] int, _relative_position_bucket(rel, bidirectional=True, 32, 128)",
         "bucket_unidirectional": "[601] int, _relative_position_bucket(rel, bidirectional=False, 32, 128)"},
        "bidirectional: 16 buckets per sign, rel > 0 (future key) adds 16, n = |rel|; unidirectional: "
        "n = max(-rel, 0). n < max_exact (8 resp. 16): bucket n; else max_exact + trunc(log(n/max_exact) / "
        "log(max_distance/max_exact) * (nb - max_exact)) capped at nb-1, the log branch in float32.",
        {"bidirectional_f32log_vs_f64log_mismatches": int((bb != t5_bucket(rel, True, 32, 128, F64)).sum()),
         "unidirectional_f32log_vs_f64log_mismatches": int((bu != t5_bucket(rel, False, 32, 128, F64)).sum())},
        params={"num_buckets": 32, "max_distance": 128, "bidirectional": [True, False],
                "outputs": {"bucket_bidirectional": {"bidirectional": True},
                            "bucket_unidirectional": {"bidirectional": False}}},
        limits={"bidirectional_f32log_vs_f64log_mismatches": 0, "unidirectional_f32log_vs_f64log_mismatches": 0},
        dtype_note="log branch evaluated in float32 (relative_position.float()) and truncated toward zero"))

    cases = [("encoder_bidir_B2_H4_q7_k7_D16", 2, 4, 7, 7, 16, False),
             ("encoder_bidir_long_B1_H2_q33_k33_D8", 1, 2, 33, 33, 8, False),
             ("decoder_causal_B1_H3_q33_k33_D8", 1, 3, 33, 33, 8, True),
             ("decoder_decode_B2_H4_q1_k20_D16", 2, 4, 1, 20, 16, True)]
    for name, B, H, Lq, Lk, D, is_decoder in cases:
        c = Case("t5", "attention_" + name)
        q = c.add("q", c.randn((B, H, Lq, D)))
        k = c.add("k", c.randn((B, H, Lk, D)))
        v = c.add("v", c.randn((B, H, Lk, D)))
        table = c.add("rel_bias_table", c.randn((32, H), 0.5))
        if Lq == Lk:
            context = np.arange(Lq)
            cache_position = None
        else:
            cache_position = list(range(Lk - Lq, Lk))
            context = np.array(cache_position)
        rel = np.arange(Lk)[None, :] - context[:, None]
        c.add("relative_position", rel.astype(I64))
        bucket = c.add("bucket", t5_bucket(rel, not is_decoder, 32, 128))
        bucket64 = t5_bucket(rel, not is_decoder, 32, 128, F64)
        pbias = np.transpose(table[bucket], (2, 0, 1))[None].astype(F32)     # [1, H, Lq, Lk]
        c.add("position_bias", pbias)
        allowed = causal_allowed(Lq, Lk) if is_decoder else np.ones((Lq, Lk), bool)
        c.add("mask_allowed", allowed.astype(I64))
        mask_add = np.where(allowed, F32(0), FINFO32_MIN).astype(F32)
        sc = (mm32(q, np.swapaxes(k, -1, -2)) + (pbias + mask_add).astype(F32)).astype(F32)
        probs = c.add("probs", softmax32(sc, allowed))
        o = c.add("out", mm32(probs, v))
        # float64: direct formula score = q.k + table[bucket(j - p_i), h], no scaling
        bias64 = np.transpose(table.astype(F64)[bucket64], (2, 0, 1))[None]
        sc64 = np.einsum("bhid,bhjd->bhij", q.astype(F64), k.astype(F64)) + bias64
        p64 = c.add("probs_f64", softmax64(sc64, allowed), "float64")
        o64 = c.add("out_f64", np.matmul(p64, v.astype(F64)), "float64")
        lay = dict(ATTN_LAYOUT)
        lay["rel_bias_table"] = "[num_buckets=32, heads] relative_attention_bias.weight"
        lay["relative_position"] = "[q_len, k_len] int, j - p_i (memory_position - context_position)"
        lay["bucket"] = "[q_len, k_len] int, _relative_position_bucket(relative_position, bidirectional=not is_decoder)"
        lay["position_bias"] = "[1, heads, q_len, k_len] rel_bias_table[bucket[i,j], h] (compute_bias output, no mask)"
        params = {"is_decoder": is_decoder, "bidirectional": not is_decoder, "num_buckets": 32,
                  "max_distance": 128, "causal": is_decoder, "scale": "none (T5 does not scale by 1/sqrt(d))",
                  "mask": MASK_CAUSAL if is_decoder else "none"}
        if cache_position is not None:
            params["cache_position"] = cache_position
            params["query_length"] = None
        out.append(c.finish(
            [C_HF_T5 + ":src/transformers/models/t5/modeling_t5.py:T5Attention.compute_bias",
             ref_bucket,
             C_HF_T5 + ":src/transformers/models/t5/modeling_t5.py:T5Attention.forward (scores = q@k^T + "
                       "position_bias (+ finfo.min mask); softmax(scores.float()); @ v)"],
            lay,
            "score[b,h,i,j] = q_i.k_j + rel_bias_table[bucket(j - p_i), h] (no 1/sqrt(d) scaling), masked "
            "entries excluded; softmax over j; out = probs @ v",
            {"probs_f32_vs_f64": maxdiff(probs, p64), "out_f32_vs_f64": maxdiff(o, o64),
             "bucket_f32log_vs_f64log_mismatches": int((bucket != bucket64).sum())},
            shapes=attn_shapes(B, H, H, Lq, Lk, D, with_kv=False), params=params,
            limits={"bucket_f32log_vs_f64log_mismatches": 0},
            dtype_note="T5 computes softmax on scores.float(); probs_f64/out_f64 are our float64 evaluation of "
                       "the formula in meta.semantics"))
    return out


# ----------------------------------------------------------------------------------------------------------
# (d) RoPE
# ----------------------------------------------------------------------------------------------------------
def rotate_half(x):
    h = x.shape[-1] // 2
    return np.concatenate([-x[..., h:], x[..., :h]], axis=-1)


def rotate_every_two(x):
    x1 = x[..., ::2]
    x2 = x[..., 1::2]
    return np.stack((-x2, x1), axis=-1).reshape(x.shape)


def default_inv_freq(base, dim, dt):
    if dt == F32:
        ex = (np.arange(0, dim, 2).astype(F32) / F32(dim)).astype(F32)
        return recip32(pow32(F32(base), ex))
    return 1.0 / (float(base) ** (np.arange(0, dim, 2).astype(F64) / dim))


def llama3_inv_freq(base, dim, factor, low, high, old_ctx, dt):
    """transformers modeling_rope_utils._compute_llama3_parameters."""
    inv = default_inv_freq(base, dim, dt)
    low_wl = old_ctx / low
    high_wl = old_ctx / high
    if dt == F32:
        wavelen = (recip32(inv) * F32(2 * math.pi)).astype(F32)
        inv_l = np.where(wavelen > F32(low_wl), (inv / F32(factor)).astype(F32), inv).astype(F32)
        smooth = ((F32(old_ctx) * recip32(wavelen)).astype(F32) - F32(low)).astype(F32) / F32(high - low)
        smooth = smooth.astype(F32)
        smoothed = ((((F32(1) - smooth).astype(F32) * inv_l).astype(F32) / F32(factor)).astype(F32)
                    + (smooth * inv_l).astype(F32)).astype(F32)
        is_med = ~(wavelen < F32(high_wl)) & ~(wavelen > F32(low_wl))
        return np.where(is_med, smoothed, inv_l).astype(F32)
    wavelen = 2 * math.pi / inv
    inv_l = np.where(wavelen > low_wl, inv / factor, inv)
    smooth = (old_ctx / wavelen - low) / (high - low)
    smoothed = (1 - smooth) * inv_l / factor + smooth * inv_l
    is_med = ~(wavelen < high_wl) & ~(wavelen > low_wl)
    return np.where(is_med, smoothed, inv_l)


def dynamic_ntk_base(base, factor, seq_len, mpe, dim, dt):
    if dt == F32:
        t = (F32(factor) * F32(seq_len)).astype(F32)
        t = (t / F32(mpe)).astype(F32)
        t = (t - F32(factor - 1)).astype(F32)
        return (F32(base) * pow32(t, F32(dim / (dim - 2)))).astype(F32)
    return base * ((factor * seq_len / mpe) - (factor - 1)) ** (dim / (dim - 2))


def hf_cos_sin(inv_freq, pos, dt, pos_scale=None):
    """LlamaRotaryEmbedding.forward: freqs = inv_freq (x) pos (float32), emb = cat(freqs, freqs): [B, L, dim]."""
    if dt == F32:
        p = np.asarray(pos).astype(F32)
        if pos_scale is not None:
            p = (p / F32(pos_scale)).astype(F32)
        freqs = (p[..., None] * inv_freq[None, None, :]).astype(F32)
        emb = np.concatenate([freqs, freqs], axis=-1)
        return cos32(emb), sin32(emb)
    p = np.asarray(pos).astype(F64)
    if pos_scale is not None:
        p = p / pos_scale
    freqs = p[..., None] * inv_freq[None, None, :]
    emb = np.concatenate([freqs, freqs], axis=-1)
    return cos64(emb), sin64(emb)


def apply_half(x, cos, sin, rot, dt):
    """rotate_half RoPE on the first `rot` channels; cos/sin [B, L, rot] broadcast over heads."""
    xr = x[..., :rot]
    c = cos[:, None]
    s = sin[:, None]
    if dt == F32:
        y = ((xr * c).astype(F32) + (rotate_half(xr) * s).astype(F32)).astype(F32)
    else:
        y = xr * c + rotate_half(xr) * s
    return np.concatenate([y, x[..., rot:]], axis=-1)


def rope_formula64(x, pos, theta, rot, pairing):
    """Direct float64 evaluation of the contract's rotation formulas (independent cross-check)."""
    x = x.astype(F64)
    y = x.copy()
    half = rot // 2
    ang = np.asarray(pos, F64)[:, None, :, None] * theta[None, None, None, :]   # [B,1,L,rot/2]
    c, s = np.cos(ang), np.sin(ang)
    if pairing == "half":
        a, b = x[..., :half], x[..., half:rot]
        y[..., :half] = a * c - b * s
        y[..., half:rot] = b * c + a * s
    else:
        a, b = x[..., 0:rot:2], x[..., 1:rot:2]
        y[..., 0:rot:2] = a * c - b * s
        y[..., 1:rot:2] = b * c + a * s
    return y


def rope_attention(c, q, k, v, qr, kr, qr64, kr64, allowed, style):
    """Eager attention on rotated q/k; returns probs, out, probs64, out64 (and stores them)."""
    H = q.shape[1]
    D = q.shape[-1]
    ke = expand_kv(kr, H)
    ve = expand_kv(v, H)
    if style == "llama":        # matmul / sqrt(head_dim) + finfo.min causal mask, softmax fp32
        sc = (mm32(qr, np.swapaxes(ke, -1, -2)) / F32(math.sqrt(D))).astype(F32)
        sc = (sc + np.where(allowed, F32(0), FINFO32_MIN)).astype(F32)
    elif style == "gptj":       # where(causal, w, finfo.min) / scale_attn
        sc = mm32(qr, np.swapaxes(ke, -1, -2))
        sc = (np.where(allowed, sc, FINFO32_MIN) / F32(math.sqrt(D))).astype(F32)
    else:                       # neox: baddbmm(alpha=head_dim**-0.5), where(causal, ., finfo.min)
        sc = (F32(D ** -0.5) * mm32(qr, np.swapaxes(ke, -1, -2))).astype(F32)
        sc = np.where(allowed, sc, FINFO32_MIN).astype(F32)
    probs = c.add("probs", softmax32(sc, allowed))
    o = c.add("out", mm32(probs, ve))
    sc64 = np.matmul(qr64, np.swapaxes(expand_kv(kr64, H), -1, -2)) / math.sqrt(D)
    p64 = softmax64(sc64, allowed)
    o64 = np.matmul(p64, expand_kv(v.astype(F64), H))
    return probs, o, p64, o64


ROPE_LAYOUT_COMMON = {
    "position_ids_q": "[batch, q_len] int absolute positions of the queries",
    "position_ids_k": "[batch, k_len] int absolute positions of the keys",
    "q_rot, k_rot": "q, k after the rotation (same layouts as q, k)",
}


def gen_rope():
    out = []
    llama_ref = [
        C_HF_LLAMA + ":src/transformers/models/llama/modeling_llama.py:LlamaRotaryEmbedding.forward",
        C_HF_LLAMA + ":src/transformers/models/llama/modeling_llama.py:rotate_half + apply_rotary_pos_emb",
        C_HF_LLAMA + ":src/transformers/models/llama/modeling_llama.py:repeat_kv",
        C_HF_LLAMA + ":src/transformers/models/llama/modeling_llama.py:LlamaAttention.forward (eager: "
                     "matmul/sqrt(head_dim) + causal_mask, softmax fp32, @v)"]
    llama_cases = [
        # name, B, H, KV, Lq, Lk, D, theta, scaling, pos_offset
        ("llama_default_theta1e4_B2_H4_KV4_q9_k9_D16", 2, 4, 4, 9, 9, 16, 10000.0, None, 0),
        ("llama_default_theta5e5_gqa_B1_H4_KV2_q33_k33_D32", 1, 4, 2, 33, 33, 32, 500000.0, None, 0),
        ("llama_default_theta1e4_decode_B1_H4_KV1_q1_k17_D64", 1, 4, 1, 1, 17, 64, 10000.0, None, 0),
        ("llama_default_theta5e5_odd_len_B2_H2_KV2_q7_k7_D8", 2, 2, 2, 7, 7, 8, 500000.0, None, 0),
        ("llama_linear_factor4_B1_H2_KV2_q9_k9_D16", 1, 2, 2, 9, 9, 16, 10000.0,
         {"rope_type": "linear", "factor": 4.0}, 0),
        ("llama_dynamic_ntk_factor2_mpe16_B1_H2_KV2_q33_k33_D16", 1, 2, 2, 33, 33, 16, 10000.0,
         {"rope_type": "dynamic", "factor": 2.0}, 0),
        ("llama_llama3_theta5e5_pos4000_B1_H2_KV2_q9_k9_D64", 1, 2, 2, 9, 9, 64, 500000.0,
         {"rope_type": "llama3", "factor": 8.0, "low_freq_factor": 1.0, "high_freq_factor": 4.0,
          "original_max_position_embeddings": 8192}, 4000),
        ("llama_llama3_theta5e5_decode_pos8191_B2_H4_KV2_q1_k12_D64", 2, 4, 2, 1, 12, 64, 500000.0,
         {"rope_type": "llama3", "factor": 8.0, "low_freq_factor": 1.0, "high_freq_factor": 4.0,
          "original_max_position_embeddings": 8192}, 8180),
    ]
    for name, B, H, KV, Lq, Lk, D, theta, scaling, off in llama_cases:
        c = Case("rope", name)
        rtype = scaling["rope_type"] if scaling else "default"
        mpe = 16 if rtype == "dynamic" else (131072 if rtype == "llama3" else 2048)
        q = c.add("q", c.randn((B, H, Lq, D)))
        k = c.add("k", c.randn((B, KV, Lk, D)))
        v = c.add("v", c.randn((B, KV, Lk, D)))
        pos_k = np.broadcast_to(off + np.arange(Lk), (B, Lk)).astype(I64)
        pos_q = pos_k[:, Lk - Lq:].copy()
        c.add("position_ids_q", pos_q)
        c.add("position_ids_k", pos_k)
        pos_scale = None
        extra = {}
        if rtype == "llama3":
            s = scaling
            inv32 = llama3_inv_freq(theta, D, s["factor"], s["low_freq_factor"], s["high_freq_factor"],
                                    s["original_max_position_embeddings"], F32)
            inv64 = llama3_inv_freq(theta, D, s["factor"], s["low_freq_factor"], s["high_freq_factor"],
                                    s["original_max_position_embeddings"], F64)
        elif rtype == "dynamic":
            seq_len = int(max(pos_q.max(), pos_k.max())) + 1
            if seq_len > mpe:
                b32 = dynamic_ntk_base(theta, scaling["factor"], seq_len, mpe, D, F32)
                b64 = dynamic_ntk_base(theta, scaling["factor"], seq_len, mpe, D, F64)
            else:
                b32, b64 = F32(theta), theta
            inv32 = recip32(pow32(b32, (np.arange(0, D, 2).astype(F32) / F32(D)).astype(F32)))
            inv64 = default_inv_freq(b64, D, F64)
            extra = {"dynamic_seq_len": seq_len, "dynamic_base_f64": float(b64), "dynamic_base_f32": float(b32)}
        else:
            inv32 = default_inv_freq(theta, D, F32)
            inv64 = default_inv_freq(theta, D, F64)
            if rtype == "linear":
                pos_scale = scaling["factor"]
        c.add("inv_freq", inv32, "float32")
        cq, sq = hf_cos_sin(inv32, pos_q, F32, pos_scale)
        ck, sk = hf_cos_sin(inv32, pos_k, F32, pos_scale)
        c.add("cos_q", cq)
        c.add("sin_q", sq)
        c.add("cos_k", ck)
        c.add("sin_k", sk)
        qr = c.add("q_rot", apply_half(q, cq, sq, D, F32))
        kr = c.add("k_rot", apply_half(k, ck, sk, D, F32))
        allowed = causal_allowed(Lq, Lk)
        c.add("mask_allowed", allowed.astype(I64))
        cq64, sq64 = hf_cos_sin(inv64, pos_q, F64, pos_scale)
        ck64, sk64 = hf_cos_sin(inv64, pos_k, F64, pos_scale)
        qr64 = apply_half(q.astype(F64), cq64, sq64, D, F64)
        kr64 = apply_half(k.astype(F64), ck64, sk64, D, F64)
        ang_pos_q = pos_q / pos_scale if pos_scale else pos_q
        ang_pos_k = pos_k / pos_scale if pos_scale else pos_k
        qf = rope_formula64(q, ang_pos_q, inv64, D, "half")
        kf = rope_formula64(k, ang_pos_k, inv64, D, "half")
        probs, o, p64, o64 = rope_attention(c, q, k, v, qr, kr, qr64, kr64, allowed, "llama")
        c.add("inv_freq_f64", inv64, "float64")
        c.add("q_rot_f64", qr64, "float64")
        c.add("k_rot_f64", kr64, "float64")
        c.add("probs_f64", p64, "float64")
        c.add("out_f64", o64, "float64")
        checks = {"inv_freq_f32_vs_f64": maxdiff(inv32, inv64),
                  "q_rot_f32_vs_f64": maxdiff(qr, qr64), "k_rot_f32_vs_f64": maxdiff(kr, kr64),
                  "q_rot_f64_vs_formula": maxdiff(qr64, qf), "k_rot_f64_vs_formula": maxdiff(kr64, kf),
                  "probs_f32_vs_f64": maxdiff(probs, p64), "out_f32_vs_f64": maxdiff(o, o64)}
        limits = {"q_rot_f64_vs_formula": 1e-12, "k_rot_f64_vs_formula": 1e-12}
        tol_note = None
        if rtype == "llama3":
            tol_note = ("positions ~%d: float32 angles pos*inv_freq are off by up to ~1e-3 rad from float64; "
                        "compare float32 kernels with the float32 tensors at atol 2e-3 (float64 kernels with "
                        "*_f64 at ~1e-12)" % (off + Lk))
            for kk in ["q_rot_f32_vs_f64", "k_rot_f32_vs_f64", "probs_f32_vs_f64", "out_f32_vs_f64"]:
                limits[kk] = 2e-3
        lay = dict(ATTN_LAYOUT)
        lay.update(ROPE_LAYOUT_COMMON)
        lay["inv_freq"] = "[head_dim/2] rotary inverse frequencies (after scaling, for llama3 / dynamic)"
        lay["cos_q, sin_q, cos_k, sin_k"] = ("[batch, len, head_dim] as returned by the rotary module: "
                                             "cos(angle) of cat(freqs, freqs), freqs[p, c] = angle_pos(p) * inv_freq[c]")
        if off:
            lay["positions"] = ("key j has absolute position %d + j, query i has position %d + k_len - q_len + i "
                                "(position_ids_*); the causal mask uses the index form j <= k_len - q_len + i"
                                % (off, off))
        params = {"rope_theta": theta, "rope_scaling": scaling if scaling else {"rope_type": "default"},
                  "max_position_embeddings": mpe, "rotary_dim": D, "partial_rotary_factor": 1.0,
                  "pairing": "half", "causal": True, "scale": "1/sqrt(head_dim)", "gqa": GQA_NOTE,
                  "mask": MASK_CAUSAL, "position_offset": off, "attention_factor": 1.0}
        params.update(extra)
        if rtype == "linear":
            sem_angle = "angle(p, c) = (p / %g) * inv_freq[c]" % scaling["factor"]
        elif rtype == "dynamic":
            sem_angle = ("angle(p, c) = p * inv_freq'[c], inv_freq' = base'^(-2c/D), base' = theta*((factor*"
                         "seq_len/mpe) - (factor-1))^(D/(D-2)), seq_len = max(position_ids)+1 = %d > mpe = %d"
                         % (extra["dynamic_seq_len"], mpe))
        elif rtype == "llama3":
            sem_angle = "angle(p, c) = p * inv_freq_llama3[c] (_compute_llama3_parameters, attention_factor 1)"
        else:
            sem_angle = "angle(p, c) = p * theta^(-2c/D)"
        ref = list(llama_ref)
        if rtype == "linear":
            ref.append(C_HF_LLAMA + ":src/transformers/models/llama/modeling_llama.py:LlamaLinearScalingRotaryEmbedding")
        if rtype == "dynamic":
            ref.append(C_HF_LLAMA + ":src/transformers/models/llama/modeling_llama.py:LlamaDynamicNTKScalingRotaryEmbedding")
        if rtype == "llama3":
            ref.append(C_HF_ROPE + ":src/transformers/modeling_rope_utils.py:_compute_llama3_parameters")
        out.append(c.finish(
            ref, lay,
            "rotate_half RoPE: for c < D/2: x_rot[c] = x[c] cos(a) - x[c+D/2] sin(a), x_rot[c+D/2] = x[c+D/2] "
            "cos(a) + x[c] sin(a), a = angle(pos, c); %s. score = q_rot.k_rot(g(h)) / sqrt(D), causal, softmax, "
            "@ v(g(h))" % sem_angle,
            checks, shapes=attn_shapes(B, H, KV, Lq, Lk, D), params=params, limits=limits,
            tolerance_note=tol_note,
            dtype_note="the reference computes cos/sin and softmax in float32; *_f64 are our float64 evaluation "
                       "of meta.semantics (inv_freq_f64 from the same formula in float64)"))

    # GPT-J: interleaved pairing, embed_positions table [64, rot_dim]
    gptj_ref = [C_HF_GPTJ + ":src/transformers/models/gptj/modeling_gptj.py:create_sinusoidal_positions",
                C_HF_GPTJ + ":src/transformers/models/gptj/modeling_gptj.py:rotate_every_two + apply_rotary_pos_emb",
                C_HF_GPTJ + ":src/transformers/models/gptj/modeling_gptj.py:GPTJAttention.forward (rotary) + "
                            "GPTJAttention._attn"]
    for name, B, H, Lq, Lk, D, rot in [("gptj_full_B2_H4_q9_k9_D16_rot16", 2, 4, 9, 9, 16, 16),
                                       ("gptj_partial_rot8_B1_H2_q33_k33_D32_rot8", 1, 2, 33, 33, 32, 8),
                                       ("gptj_full_decode_B1_H4_q1_k17_D64_rot64", 1, 4, 1, 17, 64, 64)]:
        c = Case("rope", name)
        npos = 64
        q = c.add("q", c.randn((B, H, Lq, D)))
        k = c.add("k", c.randn((B, H, Lk, D)))
        v = c.add("v", c.randn((B, H, Lk, D)))
        pos_k = np.broadcast_to(np.arange(Lk), (B, Lk)).astype(I64)
        pos_q = pos_k[:, Lk - Lq:].copy()
        c.add("position_ids_q", pos_q)
        c.add("position_ids_k", pos_k)
        inv32 = default_inv_freq(10000.0, rot, F32)
        inv64 = default_inv_freq(10000.0, rot, F64)
        c.add("inv_freq", inv32, "float32")
        sinusoid = (np.arange(npos).astype(F32)[:, None] * inv32[None, :]).astype(F32)
        table = c.add("embed_positions", np.concatenate([sin32(sinusoid), cos32(sinusoid)], axis=1))

        def gj_cs(pos, dt):
            if dt == F32:
                sc_ = table[pos]                                    # [B, L, rot]
                s_, c_ = sc_[..., :rot // 2], sc_[..., rot // 2:]
            else:
                ang = np.asarray(pos, F64)[..., None] * inv64
                s_, c_ = sin64(ang), cos64(ang)
            return np.repeat(c_, 2, axis=-1), np.repeat(s_, 2, axis=-1)

        def gj_apply(x, cs, sn, dt):
            xr = x[..., :rot]
            cc, ss = cs[:, None], sn[:, None]
            if dt == F32:
                y = ((xr * cc).astype(F32) + (rotate_every_two(xr) * ss).astype(F32)).astype(F32)
            else:
                y = xr * cc + rotate_every_two(xr) * ss
            return np.concatenate([y, x[..., rot:]], axis=-1)

        cq, sq = gj_cs(pos_q, F32)
        ck, sk = gj_cs(pos_k, F32)
        c.add("cos_q", cq)
        c.add("sin_q", sq)
        c.add("cos_k", ck)
        c.add("sin_k", sk)
        qr = c.add("q_rot", gj_apply(q, cq, sq, F32))
        kr = c.add("k_rot", gj_apply(k, ck, sk, F32))
        allowed = causal_allowed(Lq, Lk)
        c.add("mask_allowed", allowed.astype(I64))
        cq64, sq64 = gj_cs(pos_q, F64)
        ck64, sk64 = gj_cs(pos_k, F64)
        qr64 = gj_apply(q.astype(F64), cq64, sq64, F64)
        kr64 = gj_apply(k.astype(F64), ck64, sk64, F64)
        qf = rope_formula64(q, pos_q, inv64, rot, "interleaved")
        kf = rope_formula64(k, pos_k, inv64, rot, "interleaved")
        probs, o, p64, o64 = rope_attention(c, q, k, v, qr, kr, qr64, kr64, allowed, "gptj")
        c.add("inv_freq_f64", inv64, "float64")
        c.add("q_rot_f64", qr64, "float64")
        c.add("k_rot_f64", kr64, "float64")
        c.add("probs_f64", p64, "float64")
        c.add("out_f64", o64, "float64")
        lay = dict(ATTN_LAYOUT)
        lay.update(ROPE_LAYOUT_COMMON)
        lay["inv_freq"] = "[rotary_dim/2] 10000^(-2i/rotary_dim)"
        lay["embed_positions"] = "[64, rotary_dim] create_sinusoidal_positions table: row p = [sin(p*inv_freq) | cos(p*inv_freq)]"
        lay["cos_q, sin_q, cos_k, sin_k"] = ("[batch, len, rotary_dim] per-channel multipliers as applied by "
                                             "apply_rotary_pos_emb (repeat_interleave'd: channels 2i and 2i+1 both "
                                             "hold cos/sin(p*inv_freq[i]))")
        out.append(c.finish(
            gptj_ref, lay,
            "interleaved RoPE on the first rotary_dim channels: x_rot[2i] = x[2i] cos(p t_i) - x[2i+1] sin(p t_i), "
            "x_rot[2i+1] = x[2i+1] cos(p t_i) + x[2i] sin(p t_i), t_i = 10000^(-2i/rotary_dim), channels >= "
            "rotary_dim unchanged; score = q_rot.k_rot / sqrt(D), causal, softmax, @ v",
            {"inv_freq_f32_vs_f64": maxdiff(inv32, inv64),
             "q_rot_f32_vs_f64": maxdiff(qr, qr64), "k_rot_f32_vs_f64": maxdiff(kr, kr64),
             "q_rot_f64_vs_formula": maxdiff(qr64, qf), "k_rot_f64_vs_formula": maxdiff(kr64, kf),
             "probs_f32_vs_f64": maxdiff(probs, p64), "out_f32_vs_f64": maxdiff(o, o64)},
            shapes=attn_shapes(B, H, H, Lq, Lk, D),
            params={"rope_theta": 10000.0, "rope_scaling": {"rope_type": "default"}, "max_position_embeddings": npos,
                    "rotary_dim": rot, "pairing": "interleaved", "causal": True, "scale": "1/sqrt(head_dim)",
                    "gqa": GQA_NOTE, "mask": MASK_CAUSAL},
            limits={"q_rot_f64_vs_formula": 1e-12, "k_rot_f64_vs_formula": 1e-12},
            dtype_note="GPT-J computes the sinusoid table and the attention in float32; *_f64 are our float64 "
                       "evaluation of meta.semantics"))

    # GPT-NeoX partial rotary (rotate_half over rotary_ndims)
    neox_ref = [C_HF_NEOX + ":src/transformers/models/gpt_neox/modeling_gpt_neox.py:GPTNeoXRotaryEmbedding",
                C_HF_NEOX + ":src/transformers/models/gpt_neox/modeling_gpt_neox.py:rotate_half + apply_rotary_pos_emb",
                C_HF_NEOX + ":src/transformers/models/gpt_neox/modeling_gpt_neox.py:GPTNeoXAttention."
                            "_attn_projections_and_rope (rotary statements) + GPTNeoXAttention._attn "
                            "(tril bias buffer, baddbmm(alpha=head_dim**-0.5))"]
    for name, B, H, L, D, pct in [("neox_partial_pct0.25_B1_H2_L33_D32_rot8", 1, 2, 33, 32, 0.25),
                                  ("neox_partial_pct0.5_B2_H4_L9_D64_rot32", 2, 4, 9, 64, 0.5)]:
        c = Case("rope", name)
        rot = int(D * pct)
        q = c.add("q", c.randn((B, H, L, D)))
        k = c.add("k", c.randn((B, H, L, D)))
        v = c.add("v", c.randn((B, H, L, D)))
        pos = np.broadcast_to(np.arange(L), (B, L)).astype(I64)
        c.add("position_ids_q", pos)
        c.add("position_ids_k", pos)
        inv32 = default_inv_freq(10000.0, rot, F32)
        inv64 = default_inv_freq(10000.0, rot, F64)
        c.add("inv_freq", inv32, "float32")
        cs, sn = hf_cos_sin(inv32, pos, F32)
        c.add("cos_q", cs)
        c.add("sin_q", sn)
        c.add("cos_k", cs)
        c.add("sin_k", sn)
        qr = c.add("q_rot", apply_half(q, cs, sn, rot, F32))
        kr = c.add("k_rot", apply_half(k, cs, sn, rot, F32))
        allowed = causal_allowed(L, L)
        c.add("mask_allowed", allowed.astype(I64))
        cs64, sn64 = hf_cos_sin(inv64, pos, F64)
        qr64 = apply_half(q.astype(F64), cs64, sn64, rot, F64)
        kr64 = apply_half(k.astype(F64), cs64, sn64, rot, F64)
        qf = rope_formula64(q, pos, inv64, rot, "half")
        kf = rope_formula64(k, pos, inv64, rot, "half")
        probs, o, p64, o64 = rope_attention(c, q, k, v, qr, kr, qr64, kr64, allowed, "neox")
        c.add("inv_freq_f64", inv64, "float64")
        c.add("q_rot_f64", qr64, "float64")
        c.add("k_rot_f64", kr64, "float64")
        c.add("probs_f64", p64, "float64")
        c.add("out_f64", o64, "float64")
        lay = dict(ATTN_LAYOUT)
        lay.update(ROPE_LAYOUT_COMMON)
        lay["inv_freq"] = "[rotary_dim/2] 10000^(-2i/rotary_dim)"
        lay["cos_q, sin_q, cos_k, sin_k"] = "[batch, len, rotary_dim] cos/sin of cat(freqs, freqs), gathered by position_ids"
        out.append(c.finish(
            neox_ref, lay,
            "rotate_half over the first rotary_dim = int(head_dim*rotary_pct) channels: pairs (c, c + rotary_dim/2), "
            "t_c = 10000^(-2c/rotary_dim); channels >= rotary_dim pass through; score = q_rot.k_rot / sqrt(D), "
            "causal, softmax, @ v",
            {"inv_freq_f32_vs_f64": maxdiff(inv32, inv64),
             "q_rot_f32_vs_f64": maxdiff(qr, qr64), "k_rot_f32_vs_f64": maxdiff(kr, kr64),
             "q_rot_f64_vs_formula": maxdiff(qr64, qf), "k_rot_f64_vs_formula": maxdiff(kr64, kf),
             "probs_f32_vs_f64": maxdiff(probs, p64), "out_f32_vs_f64": maxdiff(o, o64)},
            shapes=attn_shapes(B, H, H, L, L, D),
            params={"rope_theta": 10000.0, "rope_scaling": {"rope_type": "default"}, "max_position_embeddings": 2048,
                    "rotary_pct": pct, "rotary_dim": rot, "pairing": "half", "causal": True,
                    "scale": "1/sqrt(head_dim)", "gqa": GQA_NOTE, "mask": MASK_CAUSAL},
            limits={"q_rot_f64_vs_formula": 1e-12, "k_rot_f64_vs_formula": 1e-12},
            dtype_note="GPT-NeoX computes cos/sin and the attention in float32; *_f64 are our float64 evaluation "
                       "of meta.semantics"))
    return out


# ----------------------------------------------------------------------------------------------------------
# (e) xPos
# ----------------------------------------------------------------------------------------------------------
def xpos_ref(x, offset, downscale, scale_base, dt):
    """torchscale XPOS.forward on x [..., length, D] (reference statement order)."""
    length, D = x.shape[-2], x.shape[-1]
    half = D // 2
    min_pos = -(length + offset) // 2
    max_pos = length + offset + min_pos
    n_rows = max_pos - min_pos
    if dt == F32:
        sbuf = ((np.arange(0, D, 2).astype(F32) + F32(0.4 * D)).astype(F32) / F32(1.4 * D)).astype(F32)
        ex = (np.arange(min_pos, max_pos).astype(F32) / F32(scale_base)).astype(F32)
        scale = pow32(sbuf[None, :], ex[:, None])
        inv = recip32(pow32(F32(10000), (np.arange(0, half).astype(F32) / F32(half)).astype(F32)))
        sinus = (np.arange(0, n_rows).astype(F32)[:, None] * inv[None, :]).astype(F32)
        sin, cos = sin32(sinus), cos32(sinus)
    else:
        sbuf = (np.arange(0, D, 2).astype(F64) + 0.4 * D) / (1.4 * D)
        ex = np.arange(min_pos, max_pos).astype(F64) / scale_base
        scale = sbuf[None, :] ** ex[:, None]
        inv = 1.0 / (10000.0 ** (np.arange(0, half).astype(F64) / half))
        sinus = np.arange(0, n_rows).astype(F64)[:, None] * inv[None, :]
        sin, cos = sin64(sinus), cos64(sinus)
    if scale.shape[0] > length:
        scale, sin, cos = scale[-length:], sin[-length:], cos[-length:]
    if downscale:
        scale = recip32(scale) if dt == F32 else 1.0 / scale
    if dt == F32:
        s2 = np.repeat((sin * scale).astype(F32), 2, axis=-1)
        c2 = np.repeat((cos * scale).astype(F32), 2, axis=-1)
        return ((x * c2).astype(F32) + (rotate_every_two(x) * s2).astype(F32)).astype(F32)
    s2 = np.repeat(sin * scale, 2, axis=-1)
    c2 = np.repeat(cos * scale, 2, axis=-1)
    return x * c2 + rotate_every_two(x) * s2


def xpos_formula64(x, offset, downscale, scale_base):
    """Contract formula: N = l+o, min_pos = -N//2, rows n = o..N-1, zeta_i = (2i+0.4D)/(1.4D)."""
    x = x.astype(F64)
    length, D = x.shape[-2], x.shape[-1]
    N = length + offset
    min_pos = -N // 2
    y = np.empty_like(x)
    for r in range(length):
        n = offset + r
        for i in range(D // 2):
            zeta = (2 * i + 0.4 * D) / (1.4 * D)
            s = zeta ** ((n + min_pos) / scale_base)
            if downscale:
                s = 1.0 / s
            th = 10000.0 ** (-i / (D / 2))
            cs, sn = math.cos(n * th), math.sin(n * th)
            a, b = x[..., r, 2 * i], x[..., r, 2 * i + 1]
            y[..., r, 2 * i] = s * (a * cs - b * sn)
            y[..., r, 2 * i + 1] = s * (b * cs + a * sn)
    return y


def gen_xpos():
    out = []
    for name, B, H, Lq, Lk, D in [("causal_B1_H2_q9_k9_D16", 1, 2, 9, 9, 16),
                                  ("causal_B2_H2_q33_k33_D32", 2, 2, 33, 33, 32),
                                  ("causal_odd_B2_H4_q7_k7_D8", 2, 4, 7, 7, 8),
                                  ("decode_B1_H4_q1_k17_D64", 1, 4, 1, 17, 64)]:
        c = Case("xpos", name)
        sb = 512
        q = c.add("q", c.randn((B, H, Lq, D)))
        k = c.add("k", c.randn((B, H, Lk, D)))
        v = c.add("v", c.randn((B, H, Lk, D)))
        offset = Lk - 1 if Lq == 1 and Lk > 1 else 0
        qx = c.add("q_xpos", xpos_ref(q, offset, False, sb, F32))
        kx = c.add("k_xpos", xpos_ref(k, 0, True, sb, F32))
        allowed = causal_allowed(Lq, Lk)
        c.add("mask_allowed", allowed.astype(I64))
        qs = (qx * F32(D ** -0.5)).astype(F32)
        sc = (mm32(qs, np.swapaxes(kx, -1, -2)) + np.where(allowed, F32(0), F32(-np.inf))).astype(F32)
        probs = c.add("probs", softmax32(sc, allowed))
        o = c.add("out", mm32(probs, v))
        qx64 = c.add("q_xpos_f64", xpos_ref(q.astype(F64), offset, False, sb, F64), "float64")
        kx64 = c.add("k_xpos_f64", xpos_ref(k.astype(F64), 0, True, sb, F64), "float64")
        sc64 = np.matmul(qx64, np.swapaxes(kx64, -1, -2)) / math.sqrt(D)
        p64 = c.add("probs_f64", softmax64(sc64, allowed), "float64")
        o64 = c.add("out_f64", np.matmul(p64, v.astype(F64)), "float64")
        lay = dict(ATTN_LAYOUT)
        lay["q_xpos"] = "[batch, heads, q_len, head_dim] xpos(q, offset, downscale=False), before the 1/sqrt(d) scaling"
        lay["k_xpos"] = "[batch, heads, k_len, head_dim] xpos(k, offset=0, downscale=True)"
        out.append(c.finish(
            [C_TORCHSCALE + ":torchscale/component/xpos_relative_position.py:XPOS (fixed_pos_embedding, "
                            "rotate_every_two, duplicate_interleave, apply_rotary_pos_emb)",
             C_TORCHSCALE + ":torchscale/component/multihead_attention.py:MultiheadAttention.forward (xpos calls) + "
                            "attention_ops (q *= head_dim^-0.5, bmm, -inf causal mask, softmax fp32)"],
            lay,
            "for a call on l rows with offset o: N = l+o, min_pos = -N//2 (floor), row n = o..N-1: zeta_i = "
            "(2i + 0.4D)/(1.4D), s[n,i] = zeta_i^((n + min_pos)/512), theta_i = 10000^(-i/(D/2)); x'[2i] = s "
            "(x[2i] cos(n theta_i) - x[2i+1] sin(n theta_i)), x'[2i+1] = s (x[2i+1] cos + x[2i] sin); keys use "
            "1/s (offset 0), queries s (offset %d). score = q_xpos.k_xpos / sqrt(D), causal, softmax, @ v" % offset,
            {"q_xpos_f32_vs_f64": maxdiff(qx, qx64), "k_xpos_f32_vs_f64": maxdiff(kx, kx64),
             "q_xpos_f64_vs_formula": maxdiff(qx64, xpos_formula64(q, offset, False, sb)),
             "k_xpos_f64_vs_formula": maxdiff(kx64, xpos_formula64(k, 0, True, sb)),
             "probs_f32_vs_f64": maxdiff(probs, p64), "out_f32_vs_f64": maxdiff(o, o64)},
            shapes=attn_shapes(B, H, H, Lq, Lk, D, with_kv=False),
            params={"scale_base": sb, "gamma": 0.4, "offset": offset, "key_offset": 0, "theta_base": 10000.0,
                    "pairing": "interleaved", "causal": True, "scale": "1/sqrt(head_dim)", "mask": MASK_CAUSAL,
                    "downscale": "keys (1/s), queries upscaled (s)"},
            limits={"q_xpos_f64_vs_formula": 1e-12, "k_xpos_f64_vs_formula": 1e-12},
            dtype_note="q_xpos/k_xpos/probs/out: float32 statement order of the reference; *_f64: the same "
                       "statements in float64 (cross-checked against the direct formula)"))
    return out


# ----------------------------------------------------------------------------------------------------------
# (f) Shaw (tensor2tensor)
# ----------------------------------------------------------------------------------------------------------
def t2t_rel_matrix(length_q, length_k, K, cache):
    if not cache:
        if length_q == length_k:
            rq = rk = np.arange(length_q)
        else:
            rk = np.arange(length_k)
            rq = rk[-length_q:]
        dist = rk[None, :] - rq[:, None]
    else:
        dist = np.arange(-length_k + 1, 1, 1)[None, :]
    return np.clip(dist, -K, K) + K


def gen_shaw():
    out = []
    for name, B, H, Lq, Lk, D, K, causal, cache in [
            ("bidir_B2_H2_q7_k7_D8_K2", 2, 2, 7, 7, 8, 2, False, False),
            ("bidir_k16_B1_H2_q9_k9_D32_K16", 1, 2, 9, 9, 32, 16, False, False),
            ("causal_B1_H4_q33_k33_D16_K4", 1, 4, 33, 33, 16, 4, True, False),
            ("decode_cache_B2_H2_q1_k17_D8_K4", 2, 2, 1, 17, 8, 4, True, True)]:
        c = Case("shaw", name)
        q = c.add("q", c.randn((B, H, Lq, D)))
        k = c.add("k", c.randn((B, H, Lk, D)))
        v = c.add("v", c.randn((B, H, Lk, D)))
        tk = c.add("rel_keys_table", c.randn((2 * K + 1, D), 0.5))
        tv = c.add("rel_values_table", c.randn((2 * K + 1, D), 0.5))
        qs = c.add("q_scaled", (q * F32(D ** -0.5)).astype(F32))
        idx = t2t_rel_matrix(Lq, Lk, K, cache)                     # [Lq, Lk]
        c.add("rel_index", idx.astype(I64))
        allowed = causal_allowed(Lq, Lk) if causal else np.ones((Lq, Lk), bool)
        c.add("mask_allowed", allowed.astype(I64))
        aK = tk[idx]                                                # [Lq, Lk, D]
        aV = tv[idx]
        # _relative_attention_inner: x@y^T + per-row x@z^T, then + bias (-1e9 above the diagonal when causal)
        xy = mm32(qs, np.swapaxes(k, -1, -2))
        xz = np.einsum("bhid,ijd->bhij", qs, aK).astype(F32)
        logits = (xy + xz).astype(F32)
        if causal and not cache:
            logits = (logits + np.where(allowed, F32(0), F32(-1e9))).astype(F32)
        c.add("logits", logits)
        probs = c.add("probs", softmax32(logits, allowed))
        o = c.add("out", (mm32(probs, v) + np.einsum("bhij,ijd->bhid", probs, aV).astype(F32)).astype(F32))
        # float64 truth, direct formula
        qs64 = q.astype(F64) * D ** -0.5
        idx_f = np.clip(np.arange(Lk)[None, :] - ((Lk - Lq) + np.arange(Lq))[:, None], -K, K) + K
        aK64 = tk.astype(F64)[idx_f]
        aV64 = tv.astype(F64)[idx_f]
        lg64 = np.einsum("bhid,bhjd->bhij", qs64, k.astype(F64)) + np.einsum("bhid,ijd->bhij", qs64, aK64)
        if causal and not cache:
            lg64 = lg64 + np.where(allowed, 0.0, -1e9)
        c.add("logits_f64", lg64, "float64")
        p64 = c.add("probs_f64", softmax64(lg64, allowed), "float64")
        o64 = c.add("out_f64", np.matmul(p64, v.astype(F64)) + np.einsum("bhij,ijd->bhid", p64, aV64), "float64")
        lay = dict(ATTN_LAYOUT)
        lay["q_scaled"] = "[batch, heads, q_len, head_dim] q * head_dim^-0.5 (applied by the caller); q is unscaled"
        lay["rel_keys_table, rel_values_table"] = ("[2K+1, head_dim] relative embeddings shared by all heads, row "
                                                   "clip(j - i, -K, K) + K")
        lay["rel_index"] = "[q_len, k_len] int, clip(j - p_i, -K, K) + K (cache: clip(j - (k_len-1), -K, K) + K)"
        lay["logits"] = ("[batch, heads, q_len, k_len] q_s.(k_j + aK[i,j]) + bias as saved by the reference "
                         "(bias = -1e9 on masked entries when causal, so masked logits are ~-1e9)")
        out.append(c.finish(
            [C_T2T + ":tensor2tensor/layers/common_attention.py:dot_product_attention_relative",
             C_T2T + ":tensor2tensor/layers/common_attention.py:_generate_relative_positions_matrix + "
                     "_generate_relative_positions_embeddings + _relative_attention_inner",
             C_T2T + ":tensor2tensor/layers/common_attention.py:attention_bias_lower_triangle (causal)"],
            lay,
            "logits[i,j] = q_s,i.(k_j + aK[i,j]) (+ bias), aK[i,j] = rel_keys_table[clip(j - i, -K, K) + K]; "
            "probs = softmax_j; out_i = sum_j probs_ij (v_j + aV[i,j]), aV from rel_values_table; q_s = q * D^-0.5",
            {"logits_f32_vs_f64_allowed": maxdiff(logits, lg64, allowed),
             "probs_f32_vs_f64": maxdiff(probs, p64), "out_f32_vs_f64": maxdiff(o, o64),
             "rel_index_vs_contract_formula_mismatches": int((idx != idx_f).sum())},
            shapes=attn_shapes(B, H, H, Lq, Lk, D, with_kv=False),
            params={"max_relative_position": K, "causal": causal, "cache": cache,
                    "heads_share_relative_embedding": True, "scale": "1/sqrt(head_dim), applied to q by the caller",
                    "mask": (MASK_CAUSAL + " (bias -1e9)") if causal else "none"},
            limits={"rel_index_vs_contract_formula_mismatches": 0},
            dtype_note="the reference runs in float32 (TF shim); *_f64 are our float64 evaluation of meta.semantics"))
    return out


# ----------------------------------------------------------------------------------------------------------
# (g) Transformer-XL
# ----------------------------------------------------------------------------------------------------------
def rel_shift(x):
    """RelPartialLearnableMultiHeadAttn._rel_shift (zero_triu=False) on [qlen, klen, ...]."""
    zero_pad = np.zeros((x.shape[0], 1) + x.shape[2:], x.dtype)
    xp = np.concatenate([zero_pad, x], axis=1)
    xp = xp.reshape((x.shape[1] + 1, x.shape[0]) + x.shape[2:])
    return xp[1:].reshape(x.shape)


def layer_norm(x, dt, eps=1e-5):
    mu = x.mean(axis=-1, keepdims=True, dtype=dt).astype(dt)
    xc = (x - mu).astype(dt)
    var = (xc * xc).mean(axis=-1, keepdims=True, dtype=dt).astype(dt)
    return (xc / np.sqrt((var + dt(eps)).astype(dt))).astype(dt)


def txl_module(w, mems, Wqkv, Wr, Wo, rwb, rrb, H, D, dt):
    """RelPartialLearnableMultiHeadAttn.forward (eval, pre_lnorm False) with dec_attn_mask; all in dtype dt."""
    qlen, B, d_model = w.shape
    mlen = 0 if mems is None else mems.shape[0]
    klen = qlen + mlen
    cat = w if mems is None else np.concatenate([mems, w], 0)
    w_heads = np.matmul(cat, Wqkv.T).astype(dt)
    pos_seq = np.arange(klen - 1, -1, -1.0)
    r = txl_pos_emb(pos_seq, d_model, dt)[:, :d_model].astype(dt)
    r_head_k = np.matmul(r, Wr.T).astype(dt)
    hq, hk, hv = np.split(w_heads, 3, axis=-1)
    hq = hq[-qlen:].reshape(qlen, B, H, D)
    hk = hk.reshape(klen, B, H, D)
    hv = hv.reshape(klen, B, H, D)
    r_head_k = r_head_k.reshape(klen, H, D)
    AC = np.einsum("ibnd,jbnd->ijbn", (hq + rwb).astype(dt), hk).astype(dt)
    BD = rel_shift(np.einsum("ibnd,jnd->ijbn", (hq + rrb).astype(dt), r_head_k).astype(dt))
    score = ((AC + BD).astype(dt) * dt(1.0 / D ** 0.5)).astype(dt)
    mask = np.triu(np.ones((qlen, klen)), 1 + mlen).astype(bool)        # True = masked
    allowed = ~mask
    sc = np.transpose(score, (2, 3, 0, 1))                                 # [B, H, qlen, klen]
    if dt == F32:
        probs = softmax32(sc, allowed)
    else:
        probs = softmax64(sc, allowed)
    attn_vec = np.einsum("bnij,jbnd->ibnd", probs, hv).astype(dt)          # [qlen, B, H, D]
    attn_out = np.matmul(attn_vec.reshape(qlen, B, H * D), Wo.T).astype(dt)
    output = layer_norm((w + attn_out).astype(dt), dt)
    return {"q": np.transpose(hq, (1, 2, 0, 3)), "k": np.transpose(hk, (1, 2, 0, 3)),
            "v": np.transpose(hv, (1, 2, 0, 3)), "r_head_k": np.transpose(r_head_k, (1, 0, 2)),
            "probs": probs, "out": np.transpose(attn_vec, (1, 2, 0, 3)), "layer_output": output,
            "allowed": allowed}


def txl_formula64(q, k, v, r, u, vb, mlen):
    """Contract formula: score[i,j] = ((q_i+u).k_j + (q_i+v).r[:, klen-1-(i_abs-j)]) / sqrt(D)."""
    B, H, qlen, D = q.shape
    klen = k.shape[2]
    sc = np.full((B, H, qlen, klen), -np.inf)
    for i in range(qlen):
        ia = mlen + i
        for j in range(klen):
            if j > ia:
                continue
            row = klen - 1 - (ia - j)
            sc[:, :, i, j] = (np.einsum("bhd,bhd->bh", q[:, :, i] + u[None], k[:, :, j])
                              + np.einsum("bhd,hd->bh", q[:, :, i] + vb[None], r[:, row])) / math.sqrt(D)
    allowed = np.isfinite(sc[0, 0])
    p = softmax64(sc, allowed)
    return p, np.matmul(p, v)


def gen_txl():
    out = []
    for name, B, H, Lq, M, Lk, D in [("nomem_B2_H2_q9_m0_k9_D8", 2, 2, 9, 0, 9, 8),
                                     ("nomem_odd_B1_H4_q33_m0_k33_D16", 1, 4, 33, 0, 33, 16),
                                     ("mem_B1_H4_q7_m10_k17_D16", 1, 4, 7, 10, 17, 16),
                                     ("mem_decode_B2_H2_q1_m16_k17_D32", 2, 2, 1, 16, 17, 32)]:
        assert Lq + M == Lk
        c = Case("txl", name)
        dm = H * D
        w = c.randn((Lq, B, dm), decimals=None)
        mems = c.randn((M, B, dm), decimals=None) if M else None
        Wqkv = c.randn((3 * H * D, dm), 1.0 / math.sqrt(dm), decimals=None)
        Wr = c.randn((H * D, dm), 1.0 / math.sqrt(dm), decimals=None)
        Wo = c.randn((dm, H * D), 1.0 / math.sqrt(H * D), decimals=None)
        rwb = c.randn((H, D), 0.5)
        rrb = c.randn((H, D), 0.5)
        r32 = txl_module(w, mems, Wqkv, Wr, Wo, rwb, rrb, H, D, F32)
        up = lambda a: None if a is None else a.astype(F64)
        r64 = txl_module(up(w), up(mems), up(Wqkv), up(Wr), up(Wo), up(rwb), up(rrb), H, D, F64)
        allowed = r32["allowed"]
        c.add("q", r32["q"], "float32")
        c.add("k", r32["k"], "float32")
        c.add("v", r32["v"], "float32")
        c.add("r_head_k", r32["r_head_k"], "float32")
        c.add("r_w_bias", rwb, "float32")
        c.add("r_r_bias", rrb, "float32")
        c.add("mask_allowed", allowed.astype(I64))
        c.add("probs", r32["probs"], "float32")
        c.add("out", r32["out"], "float32")
        c.add("layer_output", r32["layer_output"], "float32")
        for nm in ["q", "k", "v", "r_head_k", "probs", "out"]:
            c.add(nm + "_f64", r64[nm], "float64")
        pf, of = txl_formula64(r64["q"], r64["k"], r64["v"], r64["r_head_k"], rwb.astype(F64), rrb.astype(F64), M)
        # the float32 kernel inputs evaluated in float64 (what a float64 kernel fed with q/k/v/r_head_k gives)
        pf32in, of32in = txl_formula64(r32["q"].astype(F64), r32["k"].astype(F64), r32["v"].astype(F64),
                                       r32["r_head_k"].astype(F64), rwb.astype(F64), rrb.astype(F64), M)
        lay = dict(ATTN_LAYOUT)
        lay["q"] = "[batch, heads, q_len, head_dim] w_head_q of the last q_len rows (projected, no bias)"
        lay["k, v"] = "[batch, heads, k_len, head_dim] over [memory ; current] (k_len = mem_len + q_len)"
        lay["r_head_k"] = ("[heads, k_len, head_dim] r_net(pos_emb), pos_emb of pos_seq = k_len-1..0: row t is "
                           "relative distance k_len-1-t")
        lay["r_w_bias, r_r_bias"] = "[heads, head_dim] u and v of the paper"
        lay["layer_output"] = ("[q_len, batch, d_model] module output in native layout: layer_norm(w + o_net(attn_vec)) "
                               "(o_net weights / input w not stored; for completeness only)")
        lay["q_f64, k_f64, v_f64, r_head_k_f64"] = "the projections evaluated in float64 (module run in float64)"
        lay["positions"] = "query row i has absolute position i_abs = mem_len + i = k_len - q_len + i"
        out.append(c.finish(
            [C_TXL + ":pytorch/mem_transformer.py:RelPartialLearnableMultiHeadAttn.forward + _rel_shift",
             C_TXL + ":pytorch/mem_transformer.py:PositionalEmbedding",
             C_TXL + ":pytorch/mem_transformer.py:MemTransformerLM._forward (pos_seq, dec_attn_mask)"],
            lay,
            "score[i,j] = ((q_i + u).k_j + (q_i + v).r_head_k[:, k_len-1-(i_abs-j)]) / sqrt(D), i_abs = mem_len + i, "
            "masked for j > i_abs (dec_attn_mask = triu(ones(q_len, k_len), 1 + mem_len)); softmax over j; "
            "out = probs @ v (attn_vec before o_net)",
            {"probs_f32_vs_f64": maxdiff(r32["probs"], r64["probs"]),
             "out_f32_vs_f64": maxdiff(r32["out"], r64["out"]),
             "q_f32_vs_f64": maxdiff(r32["q"], r64["q"]), "r_head_k_f32_vs_f64": maxdiff(r32["r_head_k"], r64["r_head_k"]),
             "probs_ref_f64_vs_formula": maxdiff(r64["probs"], pf), "out_ref_f64_vs_formula": maxdiff(r64["out"], of),
             "probs_formula_on_f32_inputs_vs_f64": maxdiff(pf32in, r64["probs"]),
             "out_formula_on_f32_inputs_vs_f64": maxdiff(of32in, r64["out"])},
            shapes={"batch": B, "heads": H, "q_len": Lq, "mem_len": M, "k_len": Lk, "head_dim": D, "d_model": dm},
            params={"mem_len": M, "causal": True, "scale": "1/sqrt(head_dim)", "same_length": False, "clamp_len": 0,
                    "pre_lnorm": False, "d_model": dm, "n_head": H, "d_head": D,
                    "pos_seq": "k_len-1 .. 0 (descending)",
                    "mask": "masked iff j > mem_len + i (bottom-right causal over [memory ; current])"},
            limits={"probs_ref_f64_vs_formula": 1e-12, "out_ref_f64_vs_formula": 1e-12},
            dtype_note="float32 tensors: the module in float32 (scores .float(), -inf mask); q_f64/k_f64/v_f64/"
                       "r_head_k_f64/probs_f64/out_f64: the same module in float64 (projections included), "
                       "so q_f64 differs from q by float32 rounding of the projection"))
    return out


# ----------------------------------------------------------------------------------------------------------
# (h) DeBERTa
# ----------------------------------------------------------------------------------------------------------
def deberta_log_bucket_dict(bucket_size, max_position, dt=F32):
    rel = np.arange(-max_position, max_position).astype(I64)
    sign = np.sign(rel)
    mid = bucket_size // 2
    abs_pos = np.where((rel < mid) & (rel > -mid), mid - 1, np.abs(rel))
    if dt == F32:
        x = (abs_pos.astype(F32) / F32(mid)).astype(F32)
        val = (log32(x) / F32(math.log((max_position - 1) / mid))).astype(F32)
        log_pos = (np.ceil((val * F32(mid - 1)).astype(F32)) + F32(mid)).astype(F32)
        lp = (log_pos * sign.astype(F32)).astype(F32)
    else:
        log_pos = np.ceil(np.log(abs_pos / mid) / math.log((max_position - 1) / mid) * (mid - 1)) + mid
        lp = log_pos * sign
    return np.where(abs_pos <= mid, rel, np.trunc(lp).astype(I64)).astype(I64)


def deberta_log_bucket(rel, bucket_size, max_position, dt=F32):
    """da_utils.make_log_bucket_position (clamp to +-(max_position-1), then lookup in make_log_bucket_dict)."""
    rel = np.clip(np.asarray(rel, I64), -max_position + 1, max_position - 1) + max_position
    return deberta_log_bucket_dict(bucket_size, max_position, dt)[rel]


def gen_deberta():
    out = []
    c = Case("deberta", "log_bucket_position")
    rel = np.arange(-600, 601).astype(I64)
    c.add("relative_position", rel)
    checks = {}
    outputs = {}
    for bs, mp in [(256, 512), (8, 32)]:
        b = c.add("bucket_%d_%d" % (bs, mp), deberta_log_bucket(rel, bs, mp))
        checks["bucket_%d_%d_f32log_vs_f64log_mismatches" % (bs, mp)] = int((b != deberta_log_bucket(rel, bs, mp, F64)).sum())
        outputs["bucket_%d_%d" % (bs, mp)] = {"bucket_size": bs, "max_position": mp}
    out.append(c.finish(
        [C_DEBERTA + ":DeBERTa/deberta/da_utils.py:make_log_bucket_position (+ make_log_bucket_dict)"],
        {"relative_position": "[1201] int, i - j = -600..600 (the reference was called on rel[None, :])",
         "bucket_256_512": "[1201] int, make_log_bucket_position(rel, bucket_size=256, max_position=512)",
         "bucket_8_32": "[1201] int, make_log_bucket_position(rel, bucket_size=8, max_position=32)"},
        "rel is clamped to [-(max_position-1), max_position-1]; mid = bucket_size//2; |rel| <= mid: rel; else "
        "sign(rel) * (ceil(log(|rel|/mid) / log((max_position-1)/mid) * (mid-1)) + mid), log in float32",
        checks,
        params={"pairs": [[256, 512], [8, 32]], "outputs": outputs,
                "clamp": "rel clamped to [-(max_position-1), max_position-1] before bucketing"},
        limits={k: 0 for k in checks},
        dtype_note="the reference evaluates the log branch in float32 (int64 / int -> float32)"))

    for name, B, H, L, D, buckets, max_rel, shared in [
            ("v2_span8_B2_H2_L7_D8", 2, 2, 7, 8, -1, 8, False),
            ("v2_span16_clamped_B1_H4_L33_D16", 1, 4, 33, 16, -1, 16, False),
            ("v3_logbucket8_max32_sharedkey_B1_H4_L33_D16", 1, 4, 33, 16, 8, 32, True),
            ("v3_logbucket256_max512_sharedkey_B2_H2_L9_D32", 2, 2, 9, 32, 256, 512, True)]:
        c = Case("deberta", name)
        span = buckets if buckets > 0 else max_rel
        q = c.add("q", c.randn((B, H, L, D)))
        k = c.add("k", c.randn((B, H, L, D)))
        v = c.add("v", c.randn((B, H, L, D)))
        pk = c.add("pos_key", c.randn((H, 2 * span, D), 0.5))
        pq = c.add("pos_query", c.randn((H, 2 * span, D), 0.5))
        rel = np.arange(L)[:, None] - np.arange(L)[None, :]
        rel64 = rel
        if buckets > 0:
            rel = deberta_log_bucket(rel, buckets, max_rel)
            rel64 = deberta_log_bucket(np.arange(L)[:, None] - np.arange(L)[None, :], buckets, max_rel, F64)
        c.add("relative_position", rel.astype(I64))
        idx = np.clip(rel + span, 0, 2 * span - 1)
        c.add("c2p_index", idx.astype(I64))
        allowed = np.ones((L, L), bool)
        c.add("mask_allowed", allowed.astype(I64))
        scale = F32(1 / math.sqrt(D * 3))
        content = mm32(q, (np.swapaxes(k, -1, -2) * scale).astype(F32))
        c2p_att = mm32(q, (np.swapaxes(pk, -1, -2)[None] * scale).astype(F32))           # [B,H,L,2span]
        c2p = np.take_along_axis(c2p_att, np.broadcast_to(idx, (B, H, L, L)), axis=-1)
        p2c_att = mm32(k, (np.swapaxes(pq, -1, -2)[None] * scale).astype(F32))           # [B,H,Lk,2span]
        # p2c_pos = clamp(-r_pos + span); gather on the last axis, then transpose: p2c[i,j] uses idx[i,j]
        p2c_pos = np.clip(-rel + span, 0, 2 * span - 1)
        p2c = np.swapaxes(np.take_along_axis(p2c_att, np.broadcast_to(p2c_pos, (B, H, L, L)), axis=-1), -1, -2)
        score = (content + (c2p + p2c).astype(F32)).astype(F32)
        shifted = c.add("attention_logits_shifted", (score - score.max(axis=-1, keepdims=True)).astype(F32))
        probs = c.add("probs", softmax32(shifted, allowed))
        o = c.add("out", mm32(probs, v))
        # float64 direct formula
        q64, k64, v64, pk64, pq64 = (a.astype(F64) for a in (q, k, v, pk, pq))
        idx64 = np.clip(rel64 + span, 0, 2 * span - 1)
        sc64 = np.einsum("bhid,bhjd->bhij", q64, k64)
        sc64 = sc64 + np.einsum("bhid,hijd->bhij", q64, pk64[:, idx64])
        sc64 = sc64 + np.einsum("bhjd,hijd->bhij", k64, pq64[:, idx64])
        sc64 = sc64 / math.sqrt(3 * D)
        p64 = c.add("probs_f64", softmax64(sc64, allowed), "float64")
        o64 = c.add("out_f64", np.matmul(p64, v64), "float64")
        lay = dict(ATTN_LAYOUT)
        lay["q"] = "[batch, heads, L, head_dim] query_proj output (with bias), unscaled"
        lay["k, v"] = "[batch, heads, L, head_dim] key_proj / value_proj outputs (with bias)"
        lay["pos_key, pos_query"] = ("[heads, 2*span, head_dim] projected relative embeddings (%s)"
                                     % ("share_att_key: key_proj / query_proj" if shared else "pos_key_proj / pos_query_proj"))
        lay["relative_position"] = "[L, L] int, i - j%s" % (" log-bucketed (make_log_bucket_position)" if buckets > 0 else "")
        lay["c2p_index"] = "[L, L] int, clamp(relative_position + span, 0, 2*span - 1); p2c uses the same index"
        lay["attention_logits_shifted"] = "[batch, heads, L, L] the reference's returned logits: score - rowmax(score)"
        out.append(c.finish(
            [C_DEBERTA + ":DeBERTa/deberta/disentangled_attention.py:DisentangledSelfAttention.forward + "
                         "disentangled_attention_bias",
             C_DEBERTA + ":DeBERTa/deberta/da_utils.py:build_relative_position + make_log_bucket_position",
             C_DEBERTA + ":DeBERTa/deberta/ops.py:XSoftmax"],
            lay,
            "score[i,j] = (q_i.k_j + q_i.pos_key[c2p_index[i,j]] + k_j.pos_query[c2p_index[i,j]]) / sqrt(3*head_dim), "
            "c2p_index = clamp(rel(i-j) + span, 0, 2span-1), all keys allowed; softmax over j; out = probs @ v",
            {"probs_f32_vs_f64": maxdiff(probs, p64), "out_f32_vs_f64": maxdiff(o, o64),
             "relative_position_f32log_vs_f64log_mismatches": int((rel != rel64).sum())},
            shapes={"batch": B, "heads": H, "q_len": L, "k_len": L, "head_dim": D},
            params={"position_buckets": buckets, "max_relative_positions": max_rel, "span": span,
                    "share_att_key": shared, "pos_att_type": "p2c|c2p", "relative_attention": True,
                    "scale": "1/sqrt(3*head_dim)", "scale_factor": 3, "causal": False, "mask": "none (all-ones)"},
            limits={"relative_position_f32log_vs_f64log_mismatches": 0},
            dtype_note="the reference casts q/k to float32; *_f64 are our float64 evaluation of meta.semantics"))
    return out


GENERATORS = [gen_sinusoidal, gen_alibi, gen_t5, gen_rope, gen_xpos, gen_shaw, gen_txl, gen_deberta]


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--out", default=DEFAULT_OUT, help="output directory (default: tests/conformance/cases)")
    args = ap.parse_args(argv)
    total = 0
    n = 0
    for g in GENERATORS:
        for c in g():
            path, size = write_case(c, args.out)
            with open(path) as f:
                back = json.load(f)          # the file must load as JSON
            for name, dtype, arr in c.tensors:
                t = back["tensors"][name]
                assert t["dtype"] == dtype and t["shape"] == list(arr.shape) and len(t["data"]) == arr.size
                if dtype == "float32":
                    assert np.array_equal(np.array(t["data"], F64).astype(F32).reshape(arr.shape), arr), (path, name)
                elif dtype == "float64":
                    assert np.array_equal(np.array(t["data"], F64).reshape(arr.shape), arr), (path, name)
                else:
                    assert np.array_equal(np.array(t["data"], I64).reshape(arr.shape), arr), (path, name)
            total += size
            n += 1
            print("wrote %s (%d bytes, %d tensors)" % (os.path.relpath(path), size, len(c.tensors)))
    print("%d cases, %d bytes total" % (n, total))
    return 0


if __name__ == "__main__":
    sys.exit(main())
