#!/usr/bin/env bash
# The one script to run on a machine with an NVIDIA GPU (docs/gpu.md): builds `qgpu-gpu-record`
# (only common/ and gpu/: needs a C++20 compiler, the nlohmann-json headers and, optionally, CMake
# and cuda.h; none of our other Debian libraries), runs every case of reports/gpu/inputs/ on the
# GPU and writes reports/gpu/recording.json, comparing each kernel with the interpreter result
# exported alongside. Then, on any machine: commit the recording; `ctest -R gpu_recorded_test` (or
# `qgpu gpu compare`) checks it against today's interpreter.
#
# nlohmann-json: $QGPU_JSON_INCLUDE_DIR, else build-gpu-deps/include (made by ci/gpu-prepare.sh
# on a machine that has it, and brought along with the tree), else an installed copy.
#
# Usage: ci/gpu-record.sh [OUT_DIR]   OUT_DIR (or $OUT) also receives recording.json and the log.
#        The catalog's reports/gpu/inputs, then, when `qgpu gpu export --random N` wrote it,
#        reports/gpu/random (→ reports/gpu/random-recording.json). QGPU_GPU_INPUTS=DIR runs only
#        DIR (→ DIR/../<name>-recording.json, or recording.json for the catalog's).
# Exit code: qgpu-gpu-record's (0 all agree, 1 mismatch, 2 bad inputs, 3 harness error,
# 4 inconclusive: no GPU/driver or some case could not run; with two inputs the larger), or 3 if
# the build fails.
# Time: about 30 s to build and well under a minute to run 130 cases on an H200.
set -uo pipefail
cd "$(dirname "$0")/.."
out="${1:-${OUT:-}}"
if [ -n "${QGPU_GPU_INPUTS:-}" ]; then
  sets=("${QGPU_GPU_INPUTS%/}")
else
  sets=(reports/gpu/inputs)
  [ -f reports/gpu/random/manifest.txt ] && sets+=(reports/gpu/random)
fi
recordingOf() {  # the recording file of an inputs folder
  if [ "$1" = reports/gpu/inputs ]; then echo reports/gpu/recording.json
  else echo "$(dirname "$1")/$(basename "$1")-recording.json"; fi
}
build=build-gpu-record
log=$(mktemp)

record() {
echo "== qgpu gpu-record on $(hostname) at $(date -u +%Y-%m-%dT%H:%M:%SZ)"
command -v nvidia-smi >/dev/null && nvidia-smi --query-gpu=name,driver_version,compute_cap \
  --format=csv,noheader || echo "nvidia-smi not found"
for inputs in "${sets[@]}"; do
  [ -f "$inputs/manifest.txt" ] || { echo "no $inputs/manifest.txt: run 'qgpu gpu export' first"; return 2; }
done

jsoninc=""
for d in "${QGPU_JSON_INCLUDE_DIR:-}" build-gpu-deps/include; do
  if [ -n "$d" ] && [ -f "$d/nlohmann/json.hpp" ]; then jsoninc=$(cd "$d" && pwd); break; fi
done
if [ -z "$jsoninc" ] &&
   ! echo '#include <nlohmann/json.hpp>' | ${CXX:-g++} -std=c++20 -E -x c++ - >/dev/null 2>&1; then
  echo "nlohmann/json.hpp not found: run ci/gpu-prepare.sh where it is installed and bring" \
       "build-gpu-deps/ here, or set QGPU_JSON_INCLUDE_DIR"
  return 3
fi
echo "== nlohmann-json: ${jsoninc:-installed}"

# Prefer CMake (-DQGPU_GPU_ONLY=ON skips everything that needs other Debian libraries); fall back to a
# direct compile where CMake is missing or older than the 3.25 the project asks for.
built=0
if command -v cmake >/dev/null; then
  gen=$(command -v ninja >/dev/null && echo Ninja || echo "Unix Makefiles")
  if cmake -S . -B "$build" -G "$gen" -DQGPU_GPU_ONLY=ON -DCMAKE_BUILD_TYPE=Release \
       -DQGPU_JSON_INCLUDE_DIR="$jsoninc" >/dev/null &&
     cmake --build "$build" -j "$(nproc)" --target qgpu-gpu-record >/dev/null; then
    tool="$build/gpu/qgpu-gpu-record"
    built=1
  else
    echo "CMake build failed; compiling directly"
  fi
fi
if [ "$built" = 0 ]; then
  mkdir -p "$build"
  cudainc=""
  jsonflag=""
  [ -n "$jsoninc" ] && jsonflag="-isystem $jsoninc"
  for d in "${CUDA_HOME:-/nonexistent}/include" /usr/local/cuda/include; do
    if [ -f "$d/cuda.h" ]; then cudainc="-isystem $d -DQGPU_HAVE_CUDA_H=1"; break; fi
  done
  # shellcheck disable=SC2086
  ${CXX:-g++} -std=c++20 -O2 -Wall -Wextra -I. $jsonflag $cudainc common/diag.cpp \
    gpu/runner.cpp gpu/recording.cpp gpu/inputs.cpp gpu/record.cpp gpu/tool/record_main.cpp \
    -ldl -o "$build/qgpu-gpu-record" || { echo "build failed"; return 3; }
  tool="$build/qgpu-gpu-record"
fi
echo "== built $tool"

worst=0
for inputs in "${sets[@]}"; do
  echo "== $inputs"
  timeout 600 "$tool" --inputs "$inputs" --out "$(recordingOf "$inputs")"
  rc=$?
  echo "== qgpu-gpu-record exit code $rc (0 all agree, 1 mismatch, 4 inconclusive)"
  [ "$rc" -gt "$worst" ] && worst=$rc
done
return $worst
}

record 2>&1 | tee "$log"
rc=${PIPESTATUS[0]}
if [ -n "$out" ]; then
  mkdir -p "$out"
  for inputs in "${sets[@]}"; do
    [ -f "$(recordingOf "$inputs")" ] && cp "$(recordingOf "$inputs")" "$out/"
  done
  cp "$log" "$out/gpu-record.log"
fi
exit $rc
