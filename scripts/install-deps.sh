#!/usr/bin/env bash
# Installs every Debian (bookworm) package attngen needs; skips what is already present.
# Idempotent: safe to run before every build.
set -euo pipefail

packages=(
  build-essential cmake ninja-build git
  libhalide14-0-dev llvm-14-dev            # Halide 14 + the LLVM config its CMake package needs
  llvm-14                                  # llc-14: bf16 dot-product kernels (cmake/AttngenOptions.cmake)
  catch2 libbenchmark-dev nlohmann-json3-dev
  libopenblas-dev libdnnl-dev               # unfused baselines in bench/
  pocl-opencl-icd ocl-icd-opencl-dev        # OpenCL on the CPU: GPU schedules run in tests
  python3 python3-numpy python3-matplotlib  # synthetic conformance cases; bench/render.py plots
  clang-format
)

missing=()
for pkg in "${packages[@]}"; do
  if ! dpkg-query -W -f='${Status}' "$pkg" 2>/dev/null | grep -q "install ok installed"; then
    missing+=("$pkg")
  fi
done

if [ ${#missing[@]} -eq 0 ]; then
  echo "install-deps: all ${#packages[@]} packages present"
  exit 0
fi

echo "install-deps: installing ${missing[*]}"
sudo_cmd=()
[ "$(id -u)" -eq 0 ] || sudo_cmd=(sudo)
export DEBIAN_FRONTEND=noninteractive
"${sudo_cmd[@]}" apt-get update -qq
"${sudo_cmd[@]}" apt-get install -y -qq --no-install-recommends "${missing[@]}"
