#!/usr/bin/env bash
# Generate-and-compile checks of targets this machine cannot run:
#   cross:  the same generator sources produce AArch64 kernels (arm-64-linux static libraries);
#   ptx:    the CUDA kernels' PTX stages K/V tiles in shared memory and uses fused multiply-adds.
# usage: check_cross_and_ptx.sh GENERATOR OUTDIR cross|ptx
set -euo pipefail
generator=$1
out=$2
mode=$3
mkdir -p "$out"
cd "$out"
case "$mode" in
cross)
    for kernel in "scheme=sdpa shape_class=prefill" "scheme=rope scheme_options=pairing:half shape_class=decode"; do
        name=$(echo "$kernel" | tr ' =:' '___')
        # shellcheck disable=SC2086
        "$generator" -g attention -o . -e static_library,c_header -f "k_$name" -n "k_$name" target=arm-64-linux $kernel
        readelf -h "k_$name.a" | grep -q "Machine:.*AArch64" || { echo "k_$name.a is not AArch64"; exit 1; }
        echo "ok: k_$name.a is AArch64 ($(stat -c %s "k_$name.a") bytes)"
    done
    ;;
ptx)
    "$generator" -g attention -o . -e assembly,c_header -f k_ptx -n k_ptx \
        target=x86-64-linux-cuda-cuda_capability_86 scheme=sdpa shape_class=prefill
    for pattern in '\.target sm_86' 'ld\.shared\.f32' 'st\.shared\.f32' 'fma\.rn\.f32' 'bar\.sync'; do
        count=$(grep -o "$pattern" k_ptx.s | wc -l)
        echo "$pattern: $count"
        [ "$count" -gt 0 ] || { echo "PTX lacks $pattern"; exit 1; }
    done
    ;;
*)
    echo "unknown mode $mode"
    exit 2
    ;;
esac
