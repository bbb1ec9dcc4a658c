#!/usr/bin/env bash
# Builds the libFuzzer targets with clang-14 and runs each for a bounded time (QGPU_FUZZ_SECONDS,
# default 15 per commit; ci/nightly.sh gives each 600). A crash, a leak or a sanitizer report
# fails the run. File by file (QGPU_UNITY=ON: a unity build like ci/build.sh's; not yet run
# through the whole phase, so it is not the default).
set -euo pipefail
cd "$(dirname "$0")/.."
seconds="${QGPU_FUZZ_SECONDS:-15}"
CC=clang-14 CXX=clang++-14 cmake -S . -B build-fuzz -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo \
  -DQGPU_FUZZ=ON -DQGPU_WITH_TORCH=OFF -DQGPU_BENCH=OFF -DCMAKE_UNITY_BUILD="${QGPU_UNITY:-OFF}" \
  >/dev/null
cmake --build build-fuzz -j "$(nproc)" --target qgpu_fuzzers
for target in build-fuzz/fuzz/fuzz_*; do
  [ -x "$target" ] || continue
  name=$(basename "$target")
  corpus="fuzz/corpus/${name#fuzz_}"
  mkdir -p "build-fuzz/corpus-$name"
  echo "fuzzing $name for ${seconds}s"
  "$target" -max_total_time="$seconds" -max_len=4096 -timeout=10 "build-fuzz/corpus-$name" \
    $( [ -d "$corpus" ] && echo "$corpus" ) 2>&1 | tail -n 3
done
