#!/usr/bin/env bash
# Configures and builds qgpu into build/ (Release, asserts on). Extra CMake flags pass through.
# A unity build (CMAKE_UNITY_BUILD: each library's sources compiled 8 to a translation unit, so
# that their shared headers are parsed once per 8): QGPU_UNITY=OFF builds file by file, as a
# developer's incremental build does. Every file must build both ways (CONTRIBUTING.md).
set -euo pipefail
cd "$(dirname "$0")/.."
cmake -S . -B build -G Ninja -DCMAKE_BUILD_TYPE=Release -DCMAKE_UNITY_BUILD="${QGPU_UNITY:-ON}" \
  "$@" >/dev/null
cmake --build build -j "$(nproc)"
