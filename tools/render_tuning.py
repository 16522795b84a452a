#!/usr/bin/env python3
"""Renders an attngen-tune result file (schedules/tuned/<target>.json) as a Markdown table and a
PNG bar chart: GFLOP/s per scheme and shape class, tuned vs hand schedule vs each Halide
autoscheduler, and optionally the unfused baselines from an attngen-bench JSON run.

usage: render_tuning.py TUNED.json [--bench BENCH.json] [--md OUT.md] [--png OUT.png|none]
"""
import argparse
import json
import os
import sys

AUTOSCHEDULERS = ["Adams2019", "Mullapudi2016", "Li2018"]


def label(entry):
    scheme = entry["scheme"]
    if entry.get("options"):
        scheme += "_" + entry["options"].split(":")[-1]
    return scheme


# The benchmark shape closest to each tuning shape class and head dim (the benchmark suite has no 1024²
# prefill at D = 64 and decodes with D = 128 only): the table shows attngen and the baselines side by side on it.
BENCH_SHAPES = {("prefill", 64): "1x8x2048x2048x64", ("prefill", 128): "1x16x1024x1024x128",
                ("decode", 64): "1x32x1x4096x128", ("decode", 128): "1x32x1x4096x128"}
IMPLS = ("attngen", "openblas", "onednn")


def bench_baselines(path):
    """Median GFLOP/s of attngen and the unfused baselines on BENCH_SHAPES, keyed by (scheme, shape class,
    head dim, implementation); the best over the mask kinds."""
    if not path:
        return {}
    with open(path) as f:
        data = json.load(f)
    found = {}
    for b in data.get("benchmarks", []):
        if b.get("aggregate_name", "median") != "median" or "GFLOP/s" not in b:
            continue
        parts = b["name"].split("/")
        if len(parts) < 4 or parts[0] not in IMPLS:
            continue
        impl, scheme, _mask, shape = parts[:4]
        for (shape_class, head_dim), prefix in BENCH_SHAPES.items():
            if shape.startswith(prefix):
                key = (scheme, shape_class, head_dim, impl)
                found[key] = max(found.get(key, 0.0), b["GFLOP/s"])
    return found


def fmt(value):
    return "—" if value is None else f"{value:.1f}"


def machine_text(machine):
    text = f"{machine.get('cpu', '?')}"
    if "cpu_family" in machine:
        text += f" (family {machine['cpu_family']})"
    return text + f", {machine.get('cores', '?')} cores"


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("tuned")
    parser.add_argument("--bench", help="attngen-bench JSON with the baselines")
    parser.add_argument("--md")
    parser.add_argument("--png")
    args = parser.parse_args()
    with open(args.tuned) as f:
        tuned = json.load(f)
    base = os.path.splitext(args.tuned)[0]
    md_path = args.md or base + ".md"
    png_path = args.png or base + ".png"
    baselines = bench_baselines(args.bench)
    entries = sorted(tuned.get("entries", []),
                     key=lambda e: (label(e), e["shape_class"], e["head_dim"], e.get("cpu_vendor", "")))

    lines = [
        f"# Tuned schedules for `{tuned.get('target', '?')}`",
        "",
        f"Machine of the latest run: {machine_text(tuned.get('machine', {}))}; an entry tuned elsewhere names its "
        "machine after its date (entries without one predate the field). "
        "GFLOP/s on the tuning shapes: the geometric mean of each shape's rate (median of repetitions), "
        "measured by attngen-tune in one process. Prefill is tuned on (4,8,256,256,D), (1,8,512,512,D) and "
        "(1,8,1024,1024,D), each with and without the causal mask; decode on (1,32,1,4096,D). An entry's own "
        "shapes are listed in the JSON (`tuning_shapes`), with the playoff rounds that decided it (`playoff`: "
        "the fastest candidates and the hand schedule measured again round-robin; entries without one "
        "predate it). The build takes the entries of its machine's CPU vendor first (`ATTNGEN_TUNED_CPU_VENDOR`), "
        "then those for any vendor (entries tuned before the field). "
        "An autoscheduler marked ✗ failed (the reason is in the JSON); † marks a schedule that was timed on the "
        "tuning shapes but fails the reference check on smaller shapes (it is never chosen). Adams2019 runs "
        "greedily (beam size 1). An autoscheduler figure with a date in parentheses was measured by an earlier "
        "run on that date (the entry was re-tuned later without autoschedulers)."
        + (f" Bench columns: medians from the attngen-bench run on {BENCH_SHAPES[('prefill', 64)]} (prefill, "
           f"D = 64), {BENCH_SHAPES[('prefill', 128)]} (prefill, D = 128) and {BENCH_SHAPES[('decode', 64)]} "
           "(decode), best over masks." if baselines else ""),
        "",
        "| scheme | shape | D | CPU vendor | tuned | hand | tuned/hand | " + " | ".join(AUTOSCHEDULERS)
        + (" | attngen (bench) | openblas (bench) | onednn (bench)" if baselines else "")
        + " | tuned parameters | candidates (failed) | date |",
        "|---|---|---:|---|---:|---:|---:|" + "---:|" * len(AUTOSCHEDULERS) + ("---:|---:|---:|" if baselines else "") + "---|---|---|",
    ]
    for e in entries:
        g = e["gflops"]
        autos = []
        for name in AUTOSCHEDULERS:
            a = e.get("autoschedulers", {}).get(name)
            if a is None:
                autos.append("not run")
            elif a.get("gflops") is None:
                autos.append("✗")
            else:
                autos.append(fmt(a["gflops"]) + ("" if a.get("valid", True) else " †")
                             + (f" ({a['measured_on'][:10]})" if a.get("measured_on") else ""))
        p = e["params"]
        params = (f"tile {p['query_tile']}, chunk {p['key_chunk']}, qk {p['qk_block_keys']}, pv {p['pv_block_rows']}, "
                  f"vec {p['vector_width']}, {p['merge']}" + (", split-K" if p.get("split_keys") else "")
                  + ("" if p.get("trim_chunk_keys", 1) else ", no key trim")
                  + (f", key runs in head blocks {p['grouped_decode_key_runs']}" if "grouped_decode_key_runs" in p else ""))
        c = e["candidates"]
        failed = c["failed_to_compile"] + c["failed_check"]
        row = [label(e), e["shape_class"], str(e["head_dim"]), e.get("cpu_vendor") or "any", fmt(g["tuned"]), fmt(g["hand"]),
               f"{g['tuned'] / g['hand']:.2f}x" if g["hand"] else "—"] + autos
        if baselines:
            scheme = label(e)
            row += [fmt(baselines.get((scheme, e["shape_class"], e["head_dim"], impl))) for impl in IMPLS]
        date = e.get("date", "")[:10]
        if e.get("machine") and e["machine"] != tuned.get("machine"):
            date += f" ({machine_text(e['machine'])})"
        row += [params, f"{c['tried']} ({failed})", date]
        lines.append("| " + " | ".join(row) + " |")
    with open(md_path, "w") as f:
        f.write("\n".join(lines) + "\n")
    print(f"wrote {md_path}")

    if args.png == "none":
        return 0
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        print("matplotlib not available: no plot", file=sys.stderr)
        return 0
    names = [f"{label(e)}\n{e['shape_class']}" + (f"\n{e['cpu_vendor']}" if e.get("cpu_vendor") else "") for e in entries]
    series = [("tuned", [e["gflops"]["tuned"] for e in entries]), ("hand", [e["gflops"]["hand"] for e in entries])]
    for name in AUTOSCHEDULERS:
        series.append((name, [((e.get("autoschedulers", {}).get(name) or {}).get("gflops") or 0) for e in entries]))
    if baselines:
        for impl in ("openblas", "onednn"):
            series.append((impl + " (bench shape)", [baselines.get((label(e), e["shape_class"], impl), 0) for e in entries]))
    width = 0.8 / len(series)
    fig, ax = plt.subplots(figsize=(max(10, len(entries) * 0.9), 5))
    for n, (name, values) in enumerate(series):
        ax.bar([x + n * width for x in range(len(entries))], values, width, label=name)
    ax.set_xticks([x + 0.4 - width / 2 for x in range(len(entries))])
    ax.set_xticklabels(names, fontsize=7)
    ax.set_ylabel("GFLOP/s")
    ax.set_title(f"attngen tuned schedules, {tuned.get('target', '')}", fontsize=9)
    ax.legend(fontsize=7)
    fig.tight_layout()
    fig.savefig(png_path, dpi=110)
    print(f"wrote {png_path}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
