#!/usr/bin/env bash
# All tests: install dependencies, build everything (kernels, runtime, tools, tests, benchmarks),
# run the whole CTest suite (unit, scheme, bad-input, OpenCL-vs-CPU, conformance).
source "$(dirname "${BASH_SOURCE[0]}")/common.sh"
configure
build all
ctest --test-dir "$BUILD_DIR" --output-on-failure --parallel "$JOBS" "$@"
