#!/usr/bin/env bash
# qgpu/ci/model-leg.sh — the catalog through the model leg (docs/circuit.md §9 "Built: the leg"):
# one checkpoint (`qgpu circuit build`), then `qgpu run K --backend model --check` for every
# catalog kernel and compiler. A kernel with an op the circuit does not execute yet is refused
# before any token (exit 4, "does not execute"): counted as refused, not failed. Anything else but
# a match fails the script. About 3.5 minutes per kernel that runs (free decode ≈ 0.7 tokens/s).
# Usage: ci/model-leg.sh OUT_DIR [KERNEL ...]   (default: every kernel of kernels/catalog/)
#        QGPU_MODEL_LEG_DTYPE=bf16 for bf16 (≈ 20× slower here).
set -u
out="${1:?usage: ci/model-leg.sh OUT_DIR [KERNEL ...]}"
shift
qgpu=./build/harness/qgpu
dtype="${QGPU_MODEL_LEG_DTYPE:-fp32}"
mkdir -p "$out"
kernels=("$@")
if [ ${#kernels[@]} = 0 ]; then
  for f in kernels/catalog/*.cu; do kernels+=("$(basename "$f" .cu)"); done
fi
"$qgpu" circuit build --out "$out/checkpoint" >"$out/build.log" 2>&1 || { cat "$out/build.log"; exit 1; }
matched=0 refused=0 failed=0
for k in "${kernels[@]}"; do
  for c in clang nvcc; do
    log="$out/$k.$c.txt"
    "$qgpu" run "$k" --compiler "$c" --backend model --dtype "$dtype" \
      --checkpoint "$out/checkpoint" --check >"$log" 2>&1
    rc=$?
    if [ "$rc" = 0 ]; then
      matched=$((matched + 1))
    elif [ "$rc" = 4 ] && grep -q "does not execute" "$log"; then
      refused=$((refused + 1))
    else
      failed=$((failed + 1))
    fi
    echo "$k $c: exit $rc: $(tail -n 1 "$log" | cut -c1-200)"
  done
done
rm -rf "$out/checkpoint"  # 11 GB
echo "model leg ($dtype): $matched matched, $refused refused (ops not in the circuit yet), $failed failed"
[ "$failed" = 0 ]
