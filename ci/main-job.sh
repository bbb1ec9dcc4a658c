#!/usr/bin/env bash
# The main job on the built-in defaults: builds qgpu, then runs the whole kernel catalog through
# every backend available on this machine (both compilers, the interpreter, the GPU if there is
# one) and prints the summary. Exit code: see harness/cli/command.h.
set -euo pipefail
cd "$(dirname "$0")/.."
bash ci/build.sh
./build/harness/qgpu check "$@"
