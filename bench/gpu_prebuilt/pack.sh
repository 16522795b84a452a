#!/usr/bin/env bash
# Packs a build's binaries (tests, attngen-conform, attngen-bench, the example app; CUDA kernels as PTX
# inside) with the shared libraries they need and the conformance cases, for a GPU machine that has the
# CUDA driver but no Halide or Debian packages. On that machine: `bash DIR/run.sh` (writes to $OUT or
# DIR/out): CUDA tests, conformance through CUDA, the example, the suite with the automatic device,
# the GPU benchmarks, and PyTorch's fp32 SDPA on the same shapes when python3 has torch. Also writes
# DIR.tar.xz (~40 MB; the folder is ~250 MB) to copy there: `tar xJf DIR.tar.xz && bash DIR/run.sh`.
# usage: bench/gpu_prebuilt/pack.sh BUILD_DIR DIR
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
root="$(cd "$here/../.." && pwd)"
build="$1"
dir="$2"
# A build without an NVIDIA driver has no CUDA kernels unless asked for (ATTNGEN_CUDA defaults to OFF there).
grep -q '^ATTNGEN_CUDA:BOOL=ON' "$build/CMakeCache.txt" ||
    { echo "pack.sh: $build has no CUDA kernels: configure it with -DATTNGEN_CUDA=ON" >&2; exit 1; }
mkdir -p "$dir/bin" "$dir/lib" "$dir/cases"
for binary in tests/attngen_tests tools/attngen-conform bench/attngen-bench examples/attngen-example; do
    cp "$build/$binary" "$dir/bin/"
    strip "$dir/bin/$(basename "$binary")"
done
# The libraries the benchmark links that a CUDA image lacks (libc, libstdc++ and libm it has).
ldd "$dir/bin/attngen-bench" | awk '/=> \// {print $3}' | grep -E 'benchmark|openblas|dnnl|gfortran|OpenCL|gomp|quadmath' |
    while read -r lib; do cp -L "$lib" "$dir/lib/"; done
cp -r "$root/tests/conformance/public" "$dir/cases/public"
/usr/bin/python3 "$root/tests/conformance/gen_cases.py" --out "$dir/cases/synthetic" > /dev/null
cp "$here/run.sh" "$here/torch_sdpa.py" "$dir/"
tar cJf "$dir.tar.xz" -C "$(dirname "$dir")" "$(basename "$dir")"
du -sh "$dir" "$dir.tar.xz"
