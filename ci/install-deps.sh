#!/usr/bin/env bash
# Installs everything qgpu needs on a fresh Debian 12 machine (run as root or with sudo).
# The CUDA toolkit (nvcc, ptxas, cuda.h) is expected in /usr/local/cuda; without it the nvcc leg
# and the ptxas checks report "inconclusive: tool missing" rather than failing.
set -euo pipefail
SUDO=""
if [ "$(id -u)" != 0 ]; then SUDO=sudo; fi
export DEBIAN_FRONTEND=noninteractive
$SUDO apt-get update -qq
$SUDO apt-get install -y -qq --no-install-recommends \
  build-essential cmake ninja-build git python3 python3-pip \
  clang-14 llvm-14 libclang-rt-14-dev \
  libgtest-dev libgmock-dev libbenchmark-dev librapidcheck-dev \
  nlohmann-json3-dev libcli11-dev libfmt-dev libicu-dev \
  libtorch-dev libopenblas0-pthread \
  chromium >/dev/null  # the HTML report's render test (harness/tests/html_render_test.sh)
