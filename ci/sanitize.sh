#!/usr/bin/env bash
# ASan+UBSan build of the CPU tests (no LibTorch, no benchmarks), then runs them. Only what
# `ctest -L cpu` runs is built (the qgpu_cpu_tests target), at -O1 with line tables only
# (CMakeLists.txt), file by file (QGPU_UNITY=ON: a unity build like ci/build.sh's; not yet run
# through the whole phase, so it is not the default).
set -euo pipefail
cd "$(dirname "$0")/.."
cmake -S . -B build-asan -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo -DQGPU_SANITIZE=ON \
  -DQGPU_WITH_TORCH=OFF -DQGPU_BENCH=OFF -DCMAKE_UNITY_BUILD="${QGPU_UNITY:-OFF}" >/dev/null
cmake --build build-asan -j "$(nproc)" --target qgpu_cpu_tests
(cd build-asan && ctest --output-on-failure -j 2 -L cpu)
