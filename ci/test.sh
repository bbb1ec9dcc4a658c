#!/usr/bin/env bash
# The test command (README.md): builds, runs every test that this machine can run, then the
# ASan+UBSan build of the CPU tests and a bounded fuzzing run of every parser.
# QGPU_QUICK=1 skips the sanitizer build and the fuzzing (for local iteration).
set -euo pipefail
cd "$(dirname "$0")/.."
bash ci/build.sh
(cd build && ctest --output-on-failure -j 2)
if [ "${QGPU_QUICK:-0}" = 1 ]; then exit 0; fi
bash ci/sanitize.sh
bash ci/fuzz.sh
