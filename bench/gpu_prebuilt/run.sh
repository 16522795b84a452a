#!/usr/bin/env bash
# Runs on the GPU machine, from a folder made by pack.sh. Output: $OUT (or ./out).
set -u
cd "$(dirname "$0")"
out="${OUT:-$PWD/out}"
mkdir -p "$out"
export LD_LIBRARY_PATH=$PWD/lib:${LD_LIBRARY_PATH:-}
step() { echo; echo "### $1 ($(date +%T))"; }
{
    step gpu
    nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv
    step "cuda tests"
    timeout 300 bin/attngen_tests "[cuda]" 2>&1 | tail -30
    step "conformance through cuda"
    timeout 120 bin/attngen-conform --device cuda cases/public cases/synthetic > "$out/conform_cuda.txt" 2>&1
    grep "^FAIL" "$out/conform_cuda.txt" | head -30
    tail -1 "$out/conform_cuda.txt"
    step example
    timeout 60 bin/attngen-example 2>&1
    step "suite with the automatic device (cuda), no OpenCL"
    timeout 300 bin/attngen_tests "~[opencl]" 2>&1 | tail -30
} 2>&1 | tee "$out/device_checks.txt"
if python3 -c "import torch" 2> /dev/null; then
    timeout 120 python3 torch_sdpa.py 2>&1 | tee "$out/torch_sdpa.txt"
fi
ATTNGEN_BENCH_DEVICE=cuda timeout 300 bin/attngen-bench --benchmark_filter='^attngen/' --benchmark_min_time=0.05 \
    --benchmark_out="$out/gpu_bench.json" --benchmark_out_format=json 2>&1 | tail -100
