#!/usr/bin/env python3
"""Runs attngen-bench briefly on the smallest prefill shape and checks that the rows carry the paired
counters (attention_bench.cpp, paired_time_ratio) with sane values: ALiBi's time over plain attention's,
causal plain attention's GFLOP/s as a percentage of its own without the mask, attngen's speed-up over the
unfused oneDNN baseline and the bf16 kernel's over fp32's. It checks that they are measured, not how fast
anything is: the bounds only catch a counter computed from the wrong calls (a ratio of 1000x or 0)."""
import json
import subprocess
import sys
import tempfile

bench = sys.argv[1]
shape = "4x8x256x256x64"
with tempfile.NamedTemporaryFile(suffix=".json") as out:
    subprocess.run([bench, "--attngen_probe_reps=1", "--attngen_probe_mib=64",
                    f"--benchmark_filter=^attngen(_bf16)?/(sdpa|alibi)/(causal|none)/{shape}/",
                    "--benchmark_min_time=0.01", f"--benchmark_out={out.name}", "--benchmark_out_format=json"],
                   check=True, stdout=subprocess.DEVNULL)
    rows = {b["name"].removesuffix("/real_time"): b for b in json.load(open(out.name))["benchmarks"]}


def counter(row, name, low, high):
    record = rows.get(row)
    if record is None:
        sys.exit(f"missing row {row}")
    if record.get("error_occurred"):
        sys.exit(f"{row}: {record.get('error_message')}")
    value = record.get(name)
    if value is None:
        sys.exit(f"{row}: no counter {name}")
    if not low < value < high:
        sys.exit(f"{row}: {name} = {value}, outside ({low}, {high})")
    print(f"{row}: {name} = {value:.3f}")


counter(f"attngen/alibi/none/{shape}", "time_over_plain_paired", 0.2, 5)
counter(f"attngen/sdpa/causal/{shape}", "pct_noncausal_paired", 10, 500)
for mask in ("causal", "none"):
    counter(f"attngen/sdpa/{mask}/{shape}", "speedup_over_onednn_paired", 0.05, 50)
    counter(f"attngen_bf16/sdpa/{mask}/{shape}", "speedup_over_fp32_paired", 0.1, 10)
# Rows the pairing does not apply to carry no such counter.
if "pct_noncausal_paired" in rows[f"attngen/sdpa/none/{shape}"]:
    sys.exit("a non-causal row carries pct_noncausal_paired")
print("paired counters present")
