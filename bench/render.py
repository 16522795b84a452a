#!/usr/bin/python3
"""Render attngen-bench results (Google Benchmark JSON) as a Markdown table and a PNG bar chart.

    attngen-bench --benchmark_format=json --benchmark_out=results.json   (or bench/run.sh)
    bench/render.py results.json [--md results.md] [--png results.png]

Rows: scheme / mask / shape. Per implementation the value is the median over repetitions (the
"median" aggregate when present, else the median of the iteration runs). Runs with errors are shown
as "ERR". Runs with Debian's /usr/bin/python3 and python3-matplotlib.
"""
import argparse
import json
import os
import re
import statistics
import sys
from collections import OrderedDict, defaultdict

IMPLS = ["attngen", "attngen_bf16", "attngen_kvcache", "attngen_bf16_kvcache", "openblas", "onednn", "naive"]
# The suite's shapes and masks in reading order (repetitions run interleaved, so the JSON's is random).
SHAPE_ORDER = ["1x8x512x512x64", "1x8x2048x2048x64", "1x16x1024x1024x128", "4x8x256x256x64", "1x32x1x4096x128",
               "1x32x1x4096x128_kv8"]
MASK_ORDER = ["none", "causal"]
SUFFIX = re.compile(r"^(real_time|manual_time|process_time|iterations:\d+|min_time:[0-9.e+-]+s?|repeats:\d+|threads:\d+)$")


def base_name(bench):
    name = bench.get("run_name") or bench["name"]
    parts = [p for p in name.split("/") if not SUFFIX.match(p)]
    return "/".join(parts)


def load(path):
    with open(path) as f:
        data = json.load(f)
    runs = defaultdict(lambda: {"median": None, "iterations": [], "error": None, "label": ""})
    for b in data.get("benchmarks", []):
        key = base_name(b)
        entry = runs[key]
        if b.get("error_occurred"):
            entry["error"] = b.get("error_message", "error")
            continue
        if b.get("label"):
            entry["label"] = b["label"]
        if b.get("run_type") == "aggregate":
            if b.get("aggregate_name") == "median":
                entry["median"] = b
        else:
            entry["iterations"].append(b)
    values = {}
    for key, entry in runs.items():
        if entry["median"] is not None:
            record = dict(entry["median"])
        elif entry["iterations"]:
            record = {}
            for field in set().union(*(b.keys() for b in entry["iterations"])):
                numbers = [b[field] for b in entry["iterations"] if isinstance(b.get(field), (int, float))
                           and not isinstance(b.get(field), bool)]
                if numbers:
                    record[field] = statistics.median(numbers)
        else:
            record = {}
        record["_error"] = entry["error"] if not record else None
        record["_label"] = entry["label"]
        values[key] = record
    return data.get("context", {}), values


def fmt(x, digits=1):
    if x is None:
        return ""
    if isinstance(x, str):
        return x
    return f"{x:.{digits}f}"


def shape_key(shape):
    try:
        return tuple(int(v) for v in shape.split("x"))
    except ValueError:
        return (shape,)


def row_order(key):
    scheme, mask, shape = key
    known_shape = SHAPE_ORDER.index(shape) if shape in SHAPE_ORDER else len(SHAPE_ORDER)
    known_mask = MASK_ORDER.index(mask) if mask in MASK_ORDER else len(MASK_ORDER)
    return (scheme, known_shape, shape_key(shape), known_mask, mask)


def collect(values):
    """{(scheme, mask, shape): {impl: record}} by scheme, shape and mask, plus the probe records."""
    table = OrderedDict()
    probes = OrderedDict()
    for key, record in values.items():
        parts = key.split("/")
        if parts[0] == "probe":
            probes[key] = record
            continue
        if len(parts) != 4 or parts[0] not in IMPLS:
            continue
        impl, scheme, mask, shape = parts
        table.setdefault((scheme, mask, shape), {})[impl] = record
    return OrderedDict(sorted(table.items(), key=lambda item: row_order(item[0]))), probes


def counter(record, name):
    if record is None or record.get("_error"):
        return None
    value = record.get(name)
    return value if isinstance(value, (int, float)) else None


def cell(record, name, digits=1):
    if record is None:
        return ""
    if record.get("_error"):
        return "ERR"
    return fmt(counter(record, name), digits)


def milliseconds(record):
    time = counter(record, "real_time")
    if time is None:
        return ""
    return fmt(time * {"ns": 1e-6, "us": 1e-3, "s": 1e3}.get(record.get("time_unit"), 1.0), 3)


def ratio(a, b):
    if a is None or b is None or b == 0:
        return ""
    return f"{a / b:.2f}x"


def paired(record, name):
    value = counter(record, name)
    return "" if value is None else f"{value:.2f}x"


def markdown(context, table, probes, source):
    lines = []
    lines.append(f"# attngen-bench results ({os.path.basename(source)})")
    lines.append("")
    info = []
    for key in ("date", "host_name", "cpu", "num_cpus", "mhz_per_cpu"):
        if key in context:
            info.append(f"{key} {context[key]}")
    for cache in context.get("caches", []):
        if cache.get("level") == 3 and cache.get("size"):
            info.append(f"L3 {cache['size'] // (1 << 20)} MiB")
    if context.get("ftz_daz"):
        info.append(f"FTZ/DAZ {context['ftz_daz']}")
    if info:
        lines.append("Machine: " + ", ".join(str(x) for x in info) + ".")
    sgemm = context.get("probe_sgemm_peak_gflops")
    read = context.get("probe_read_2threads_gbs")
    if sgemm or read:
        lines.append(
            f"Probes (best of the start-up repetitions): OpenBLAS sgemm 2 threads n=1024 "
            f"{fmt(float(context.get('probe_sgemm_1024_2threads_gflops', 0)))}, n=2048 "
            f"{fmt(float(context.get('probe_sgemm_2048_2threads_gflops', 0)))} GFLOP/s (peak reference "
            f"{fmt(float(sgemm or 0))}); streaming read 2 threads {fmt(float(read or 0))} GB/s.")
    fma = float(context.get("probe_fma_peak_2threads_gflops", 0) or 0)
    dpbf16 = float(context.get("probe_dpbf16ps_peak_2threads_gflops", 0) or 0)
    if fma:
        line = f"Instruction peaks (register-resident, 2 threads): fp32 FMA {fmt(fma)} GFLOP/s"
        if dpbf16:
            line += f", bf16 vdpbf16ps {fmt(dpbf16)} GFLOP/s ({dpbf16 / fma:.2f}x FMA)"
        lines.append(line + ".")
    for key, record in probes.items():
        if record.get("_error"):
            lines.append(f"- `{key}`: ERR {record['_error']}")
            continue
        measured = record.get("GFLOP/s", record.get("GB/s"))
        unit = "GFLOP/s" if "GFLOP/s" in record else "GB/s"
        lines.append(f"- `{key}`: median {fmt(measured)} {unit}")
    variants = sorted({r["_label"] for row in table.values() for impl, r in row.items() if impl == "attngen" and r.get("_label")})
    cpu_targets = sorted({v.split(" | ", 1)[1] for v in variants if " | " in v})
    if cpu_targets:
        lines.append("")
        lines.append("attngen CPU variant(s): " + "; ".join(f"`{t}`" for t in cpu_targets) + ".")
    lines.append("")
    lines.append("GFLOP/s counts 4·B·H·Lq·Lk·D (halved when causal and Lq > 1); 'with extra' adds the scheme's "
                 "content-position products (Shaw, TXL, DeBERTa). Medians over repetitions; ratios are attngen / baseline. "
                 "'% read bw' is against a read probe run right after each decode row (its `read_probe_GB/s`; rows "
                 "without that counter used the start-up probe). 'time / plain, paired' is the scheme's time over plain "
                 "attention's with the two called in turn in the same row (median of the per-pair ratios), so the host's "
                 "drift between rows cancels; '% plain with extra, paired' turns it into GFLOP/s with the extra "
                 "products as a percentage of plain's. Paired the same way: 'causal % of non-causal, paired' (causal "
                 "GFLOP/s over the same kernel's without the mask), 'speed-up over oneDNN, paired' (attngen fp32 "
                 "against the unfused oneDNN baseline) and 'bf16 speed-up, paired' (the bf16 kernel against fp32's).")
    lines.append("")
    header = ["scheme", "mask", "shape", "attngen GFLOP/s", "% sgemm peak", "with extra", "openblas", "onednn",
              "naive", "attngen/openblas", "attngen/onednn", "decode GB/s", "% read bw", "attngen ms", "bf16 GFLOP/s",
              "bf16/fp32", "rotated-key cache ms", "time / plain, paired", "% plain with extra, paired",
              "bf16 time / plain, paired", "rotated-key cache time / plain, paired",
              "bf16 rotated-key cache time / plain, paired", "causal % of non-causal, paired",
              "speed-up over oneDNN, paired", "bf16 speed-up, paired"]
    lines.append("| " + " | ".join(header) + " |")
    lines.append("|" + "|".join(["---"] * 3 + ["---:"] * (len(header) - 3)) + "|")
    for (scheme, mask, shape), row in table.items():
        a = row.get("attngen")
        ag = counter(a, "GFLOP/s")
        ob = counter(row.get("openblas"), "GFLOP/s")
        od = counter(row.get("onednn"), "GFLOP/s")
        decode = counter(a, "GB/s") is not None
        time_ms = counter(a, "real_time")
        if time_ms is not None and a.get("time_unit") not in (None, "ms"):
            scale = {"ns": 1e-6, "us": 1e-3, "s": 1e3}.get(a.get("time_unit"), 1.0)
            time_ms *= scale
        cells = [scheme, mask, shape, cell(a, "GFLOP/s"), cell(a, "pct_sgemm_peak"),
                 cell(a, "GFLOP/s_with_extra") if a and "GFLOP/s_with_extra" in a else "",
                 cell(row.get("openblas"), "GFLOP/s"), cell(row.get("onednn"), "GFLOP/s"),
                 cell(row.get("naive"), "GFLOP/s", 2), ratio(ag, ob), ratio(ag, od),
                 cell(a, "GB/s") if decode else "", cell(a, "pct_read_bw") if decode else "",
                 fmt(time_ms, 3), cell(row.get("attngen_bf16"), "GFLOP/s"),
                 ratio(counter(row.get("attngen_bf16"), "GFLOP/s"), ag), milliseconds(row.get("attngen_kvcache")),
                 paired(a, "time_over_plain_paired"), cell(a, "pct_plain_with_extra_paired"),
                 paired(row.get("attngen_bf16"), "time_over_plain_paired"),
                 paired(row.get("attngen_kvcache"), "time_over_plain_paired"),
                 paired(row.get("attngen_bf16_kvcache"), "time_over_plain_paired"), cell(a, "pct_noncausal_paired"),
                 paired(a, "speedup_over_onednn_paired"), paired(row.get("attngen_bf16"), "speedup_over_fp32_paired")]
        lines.append("| " + " | ".join(cells) + " |")
    errors = [(f"{impl}/{s}/{m}/{sh}", r["_error"]) for (s, m, sh), row in table.items() for impl, r in row.items()
              if r.get("_error")]
    if errors:
        lines.append("")
        lines.append("Errors:")
        for name, message in errors:
            lines.append(f"- `{name}`: {message}")
    lines.append("")
    return "\n".join(lines)


def chart(table, path):
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    shapes = sorted({shape for (_, _, shape) in table}, key=lambda s: [shape for (_, _, shape) in table].index(s))
    fig, axes = plt.subplots(len(shapes), 1, figsize=(16, 3.6 * len(shapes)), squeeze=False)
    colors = {"attngen": "#1f77b4", "attngen_bf16": "#9467bd", "attngen_kvcache": "#17becf", "attngen_bf16_kvcache": "#bcbd22", "openblas": "#ff7f0e", "onednn": "#2ca02c", "naive": "#7f7f7f"}
    for ax, shape in zip(axes[:, 0], shapes):
        keys = [k for k in table if k[2] == shape]
        labels = [f"{s.replace('_interleaved', '_inter')}\n{m}" for (s, m, _) in keys]
        present = [impl for impl in IMPLS if any(impl in table[k] for k in keys)]
        width = 0.8 / max(len(present), 1)
        for n, impl in enumerate(present):
            heights = [counter(table[k].get(impl), "GFLOP/s") or 0.0 for k in keys]
            xs = [x + (n - (len(present) - 1) / 2) * width for x in range(len(keys))]
            ax.bar(xs, heights, width, label=impl, color=colors.get(impl))
        decode = shape.split("x")[2] == "1" if "x" in shape else False
        ax.set_title(f"shape {shape} (BxHxLqxLkxD){' decode' if decode else ''}")
        ax.set_ylabel("GFLOP/s")
        ax.set_xticks(range(len(keys)))
        ax.set_xticklabels(labels, fontsize=7)
        ax.grid(axis="y", alpha=0.3)
        ax.legend(fontsize=8, ncol=len(present))
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("json", help="Google Benchmark JSON output of attngen-bench")
    parser.add_argument("--md", help="Markdown output (default: <json>.md)")
    parser.add_argument("--png", help="PNG output (default: <json>.png); 'none' to skip")
    args = parser.parse_args()
    stem = os.path.splitext(args.json)[0]
    md_path = args.md or stem + ".md"
    png_path = args.png or stem + ".png"
    context, values = load(args.json)
    table, probes = collect(values)
    if not table and not probes:
        print(f"render.py: no attngen-bench results in {args.json}", file=sys.stderr)
        return 1
    text = markdown(context, table, probes, args.json)
    with open(md_path, "w") as f:
        f.write(text)
    print(f"wrote {md_path}")
    if png_path != "none" and table:
        chart(table, png_path)
        print(f"wrote {png_path}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
