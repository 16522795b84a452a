#!/usr/bin/env bash
# GPU mode, for a machine with an NVIDIA GPU: build with CUDA kernels, run the conformance cases
# and the test suite's device tests through CUDA, then the benchmarks on the GPU. Results go to
# bench/results/gpu-<date>.{txt,json,md}. A few minutes on a machine with the packages installed.
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
BUILD_DIR="${BUILD_DIR:-$ROOT/build-gpu}"
stamp=$(date -u +%Y-%m-%d_%H%M%S)
results="$ROOT/bench/results"
mkdir -p "$results"
log="$results/gpu-$stamp.txt"

"$ROOT/scripts/install-deps.sh"
cmake -S "$ROOT" -B "$BUILD_DIR" -G Ninja -DCMAKE_BUILD_TYPE=Release -DATTNGEN_CUDA=ON -DATTNGEN_OPENCL=OFF
cmake --build "$BUILD_DIR" --parallel "$(nproc)"
{
    echo "# attngen GPU run $stamp"
    nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv || true
    echo "## conformance through CUDA"
    /usr/bin/python3 "$ROOT/tests/conformance/gen_cases.py" --out "$BUILD_DIR/synthetic_cases" > /dev/null
    "$BUILD_DIR/tools/attngen-conform" --device cuda "$ROOT/tests/conformance/public" "$BUILD_DIR/synthetic_cases" | tail -n 3
    echo "## device tests (CUDA vs CPU)"
    "$BUILD_DIR/tests/attngen_tests" "[cuda]" | tail -n 3
} 2>&1 | tee "$log"
ATTNGEN_BENCH_DEVICE=cuda "$BUILD_DIR/bench/attngen-bench" --benchmark_filter='^(probe|attngen)/' \
    --benchmark_repetitions=3 --benchmark_report_aggregates_only=true \
    --benchmark_out="$results/gpu-$stamp.json" --benchmark_out_format=json | tee -a "$log"
/usr/bin/python3 "$ROOT/bench/render.py" "$results/gpu-$stamp.json" --md "$results/gpu-$stamp.md" --png "$results/gpu-$stamp.png" | tee -a "$log"
echo "results: $log, $results/gpu-$stamp.json, $results/gpu-$stamp.md"
