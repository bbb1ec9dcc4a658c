#!/usr/bin/env bash
# The main job on the built-in defaults: builds qgpu, then runs the whole kernel catalog through
# every backend available on this machine (both compilers, the interpreter, the GPU if there is
# one, the compiled model in fp32 and bf16), prints the summary and records the run in build/main-job/: report.json, manifest.json and
# traces/ (`qgpu audit build/main-job` re-derives them), report.html and junit.xml
# (docs/reports.md). Exit code: see harness/cli/command.h.
set -euo pipefail
cd "$(dirname "$0")/.."
bash ci/build.sh
mkdir -p build/main-job
# The model legs (fp32 and bf16: the circuit target's program of every kernel through the compiled
# Qwen3.5 model, token for token against the interpreter) take hours on a 2-core CPU (measured:
# the catalog's first 30 kernels × 2 compilers took 4,100 s of case time in fp32 and 4,500 s in
# bf16, the long expanded divisions most of it: divmod_unsigned alone 1,370 s); QGPU_MAIN_JOB_MODEL=fp32
# runs one, QGPU_MAIN_JOB_MODEL= none.
model=("--model" "${QGPU_MAIN_JOB_MODEL-fp32,bf16}")
[ -z "${QGPU_MAIN_JOB_MODEL-fp32,bf16}" ] && model=()
./build/harness/qgpu check --out build/main-job --html build/main-job/report.html \
  --junit build/main-job/junit.xml "${model[@]}" "$@"
