#!/usr/bin/env bash
# Runs the attngen benchmark suite with 3 repetitions, interleaved in random order (the host's speed
# drifts over minutes: interleaving spreads the drift over every row, so same-run ratios between
# attngen and the baselines, or between schemes, hold), and renders the results:
#   bench/results/<date>.json (Google Benchmark JSON), <date>.md (table), <date>.png (chart).
# The binary: $ATTNGEN_BENCH, else $BUILD_DIR/bench/attngen-bench (BUILD_DIR defaults to build/).
# Build it with: cmake -S . -B build -G Ninja && ninja -C build attngen-bench
# Extra arguments go to the binary, e.g. --benchmark_filter='^attngen/' or --benchmark_min_time=0.2.
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
root="$(dirname "$here")"
bin="${ATTNGEN_BENCH:-${BUILD_DIR:-$root/build}/bench/attngen-bench}"
if [ ! -x "$bin" ]; then
  echo "run.sh: no benchmark binary at $bin; build it (ninja -C build attngen-bench) or set ATTNGEN_BENCH" >&2
  exit 1
fi
mkdir -p "$here/results"
stamp="$(date +%Y-%m-%d_%H%M%S)"
out="$here/results/$stamp"
echo "run.sh: $bin -> $out.json" >&2
"$bin" --benchmark_repetitions=3 --benchmark_enable_random_interleaving=true --benchmark_report_aggregates_only=true \
  --benchmark_out="$out.json" --benchmark_out_format=json "$@"
/usr/bin/python3 "$here/render.py" "$out.json" --md "$out.md" --png "$out.png"
