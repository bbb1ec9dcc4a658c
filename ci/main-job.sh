#!/usr/bin/env bash
# The main job on the built-in defaults: builds qgpu, then runs the whole kernel catalog through
# every backend available on this machine (both compilers, the interpreter, the GPU if there is
# one), prints the summary and records the run in build/main-job/: report.json, manifest.json and
# traces/ (`qgpu audit build/main-job` re-derives them), report.html and junit.xml
# (docs/reports.md). Exit code: see harness/cli/command.h.
set -euo pipefail
cd "$(dirname "$0")/.."
bash ci/build.sh
mkdir -p build/main-job
./build/harness/qgpu check --out build/main-job --html build/main-job/report.html \
  --junit build/main-job/junit.xml "$@"
