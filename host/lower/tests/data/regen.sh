#!/usr/bin/env bash
# Regenerates the PTX inputs of the lowering tests from the .cu sources in this folder:
# NAME.clang.ptx (clang-14 -O2, PTX 6.4, with the project header kernels/qgpu_cuda.h) and
# NAME.nvcc.ptx (nvcc 13 -O3, PTX 9.0). Review the diff before committing.
set -euo pipefail
cd "$(dirname "$0")"
nvcc=${NVCC:-/usr/local/cuda/bin/nvcc}
header=../../../../kernels/qgpu_cuda.h
for cu in *.cu; do
  name=${cu%.cu}
  clang-14 -x cuda --cuda-device-only --cuda-gpu-arch=sm_75 -Xclang -target-feature -Xclang +ptx64 \
    -nocudainc -nocudalib -O2 -S -Wno-unknown-cuda-version -o "$name.clang.ptx" \
    -include "$header" "$cu"
  "$nvcc" -ptx -arch=sm_75 -O3 "$cu" -o "$name.nvcc.ptx"
done
