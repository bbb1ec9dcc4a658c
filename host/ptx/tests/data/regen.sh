#!/usr/bin/env bash
# Regenerates the PTX samples of the parser tests from the .cu sources in this folder:
# NAME.clang.ptx (clang-14, PTX 6.4, with the minimal dialect header qgpu_min_cuda.h) and
# NAME.nvcc.ptx (nvcc 13, PTX 9.0). Review the diff before committing: the tests pin details of
# these files (register numbers, labels).
set -euo pipefail
cd "$(dirname "$0")"
nvcc=${NVCC:-/usr/local/cuda/bin/nvcc}
for cu in *.cu; do
  name=${cu%.cu}
  clang-14 -x cuda --cuda-device-only --cuda-gpu-arch=sm_75 -Xclang -target-feature -Xclang +ptx64 \
    -nocudainc -nocudalib -O2 -S -Wno-unknown-cuda-version -o "$name.clang.ptx" \
    -include qgpu_min_cuda.h "$cu"
  "$nvcc" -ptx -arch=sm_75 -O3 "$cu" -o "$name.nvcc.ptx"
done
