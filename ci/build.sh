#!/usr/bin/env bash
# Configures and builds qgpu into build/ (Release, asserts on). Extra CMake flags pass through.
set -euo pipefail
cd "$(dirname "$0")/.."
cmake -S . -B build -G Ninja -DCMAKE_BUILD_TYPE=Release "$@" >/dev/null
cmake --build build -j "$(nproc)"
