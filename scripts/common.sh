# Shared by the scripts: configure and build attngen in BUILD_DIR (default: build/).
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
BUILD_DIR="${BUILD_DIR:-$ROOT/build}"
JOBS="${JOBS:-$(nproc)}"

configure() {
    "$ROOT/scripts/install-deps.sh"
    cmake -S "$ROOT" -B "$BUILD_DIR" -G Ninja -DCMAKE_BUILD_TYPE=Release "$@"
}

build() {
    cmake --build "$BUILD_DIR" --parallel "$JOBS" --target "$@"
}
