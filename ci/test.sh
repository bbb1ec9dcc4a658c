#!/usr/bin/env bash
# The test command (README.md): builds (a unity build, ci/build.sh), runs every test that this
# machine can run but those labelled `nightly` (ci/nightly.sh runs them), then the ASan+UBSan
# build of the CPU tests and a bounded fuzzing run of every parser. Each phase prints its wall
# time, so that a slow per-commit path shows where the time went.
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
# Tests labelled `nightly` (README "Tests") run in ci/nightly.sh instead. One BLAS thread per test:
# ctest runs two tests on two cores, and OpenBLAS's own pool spins against the other test's.
phase ctest bash -c 'cd build && OPENBLAS_NUM_THREADS=1 ctest --output-on-failure -j 2 -LE nightly'
if [ "${QGPU_QUICK:-0}" = 1 ]; then exit 0; fi
phase sanitize bash ci/sanitize.sh
phase fuzz bash ci/fuzz.sh
