#!/usr/bin/env bash
# The bf16 dot-product kernels (cmake/AttngenKernels.cmake): every object must hold avx512_bf16 dot
# products (vdpbf16ps) and no AVX512-FP16 instruction, which AVX-512 CPUs with bf16 but without FP16
# (AMD Zen 4, Zen 5) lack. Checked on the disassembly, so it holds whatever CPU runs the tests.
# Usage: check_bf16_dot_objects.sh <directory of *_dot.o>
set -euo pipefail
dir="$1"
shopt -s nullglob
objects=("$dir"/*_dot.o)
if [ ${#objects[@]} -eq 0 ]; then
  echo "no bf16 dot-product objects in $dir" >&2
  exit 1
fi
status=0
for object in "${objects[@]}"; do
  mnemonics="$(objdump -d --no-show-raw-insn "$object" | awk -F'\t' 'NF >= 2 {split($2, m, " "); print m[1]}')"
  # AVX512-FP16: packed and scalar half-precision ops (v...ph, v...sh) and vmovw; vcvtps2ph is F16C.
  fp16="$(grep -E '^v[a-z0-9]+(ph|sh)$|^vmovw$' <<<"$mnemonics" | grep -vx 'vcvtps2ph' | sort | uniq -c || true)"
  dots="$(grep -cx 'vdpbf16ps' <<<"$mnemonics" || true)"
  if [ -n "$fp16" ]; then
    echo "FAIL $(basename "$object"): AVX512-FP16 instructions:" >&2
    echo "$fp16" >&2
    status=1
  elif [ "$dots" -eq 0 ]; then
    echo "FAIL $(basename "$object"): no vdpbf16ps" >&2
    status=1
  else
    echo "ok   $(basename "$object"): $dots vdpbf16ps, no AVX512-FP16"
  fi
done
exit $status
