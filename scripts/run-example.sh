#!/usr/bin/env bash
# The main job: install dependencies, generate the kernel library for this machine, build the
# example app against it and run it (what ran, how fast, and the error against a naive reference).
source "$(dirname "${BASH_SOURCE[0]}")/common.sh"
configure -DATTNGEN_BUILD_BENCH=OFF
build attngen-example
"$BUILD_DIR/examples/attngen-example" "$@"
