#!/usr/bin/env bash
# The test command (README.md): builds, runs every test that this machine can run, then the
# ASan+UBSan build of the CPU tests and a bounded fuzzing run of every parser. Each phase prints
# its wall time, so that a slow per-commit path shows where the time went.
# QGPU_QUICK=1 skips the sanitizer build and the fuzzing (for local iteration).
set -euo pipefail
cd "$(dirname "$0")/.."

phase() {  # phase NAME COMMAND...: runs COMMAND and prints how long it took
  local name=$1 start=$SECONDS
  shift
  "$@"
  echo "ci phase '$name' took $((SECONDS - start)) s"
}

phase build bash ci/build.sh
# Several tests compile the whole catalog with both compilers: the compile cache
# (host/cuda/compile.h) makes that once per run instead of once per test.
export QGPU_COMPILE_CACHE="$PWD/build/compile-cache"
phase ctest bash -c 'cd build && ctest --output-on-failure -j 2'
if [ "${QGPU_QUICK:-0}" = 1 ]; then exit 0; fi
phase sanitize bash ci/sanitize.sh
phase fuzz bash ci/fuzz.sh
