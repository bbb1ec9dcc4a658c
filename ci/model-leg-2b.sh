#!/usr/bin/env bash
# qgpu/ci/model-leg-2b.sh — kernels through the `2b` checkpoint (circuit/leg.h legShapeByName:
# Qwen3.5-2B's widths — hidden 2048, 16 DeltaNet heads of 128/128, MLP 6144 — with the trace at
# its spare rows 248077.. of 248,320): builds it (`qgpu circuit build --shape 2b`, about a minute
# and 13 GB of disk), runs ci/model-leg.sh on it (check --model fp32,bf16 with --check: every
# case token for token against the interpreter), measures the decision margins of three kernels
# (`qgpu circuit margins`, fp32 and bf16, to OUT_DIR/margins.log) and removes it.
# Usage: ci/model-leg-2b.sh OUT_DIR [KERNEL ...]   (default: the eleven below — divergence, a
#        loop, shared memory and barriers, every atomic kind, shuffles and votes, multiplies)
#        QGPU_BIN, QGPU_MODEL_LEGS as ci/model-leg.sh; QGPU_2B_DIR where the checkpoint goes
#        (default OUT_DIR/checkpoint-2b).
set -u
out="${1:?usage: ci/model-leg-2b.sh OUT_DIR [KERNEL ...]}"
shift
kernels=("$@")
if [ ${#kernels[@]} -eq 0 ]; then
  kernels=(dot_atomic divergent_branch fibonacci transpose_shared atomic_inc_dec atomic_cas_mul
           reduce_min_atomic atomic_bitops warp_vote shfl_xor_allreduce matmul2x2)
fi
qgpu=${QGPU_BIN:-./build/harness/qgpu}
checkpoint="${QGPU_2B_DIR:-$out/checkpoint-2b}"
mkdir -p "$out"
if ! "$qgpu" circuit build --shape 2b --out "$checkpoint" >"$out/build.log" 2>&1; then
  cat "$out/build.log"
  rm -rf "$checkpoint"
  exit 3
fi
cat "$out/build.log"
QGPU_BIN="$qgpu" QGPU_MODEL_CHECKPOINT="$checkpoint" bash "$(dirname "$0")/model-leg.sh" "$out" \
  "${kernels[@]}"
rc=$?
# The decision margins from real activations on both paths (`qgpu circuit margins`: exit 1 when a
# pre-activation sits in R2's band (−88.8, 17)), three kernels in both dtypes, to margins.log.
: >"$out/margins.log"
for kernel in dot_atomic divergent_branch histogram_shared; do
  for dtype in fp32 bf16; do
    "$qgpu" circuit margins "$kernel" --checkpoint "$checkpoint" --dtype "$dtype" \
      >>"$out/margins.log" 2>&1 || rc=1
  done
done
grep -E "prompt tokens|smallest" "$out/margins.log"
rm -rf "$checkpoint"
exit $rc
