#!/usr/bin/env bash
# qgpu/ci/model-leg.sh — the catalog through the model leg (docs/circuit.md §9 "Built: the leg"):
# `qgpu check --model fp32,bf16` over every catalog kernel and both compilers, each case the
# circuit target's program token for token against the interpreter. A program beyond the circuit
# (a mulhi the expansion cannot fit) is inconclusive with its reason, as
# is a run that reaches the leg's LIMIT (10^6 steps) or the token budget (20,000);
# anything else but a match fails the script (the exit code is check's: 1 on a mismatch).
# Writes OUT_DIR/report.json, report.html, junit.xml and the log, and prints the tokens compared.
# Hours on this 2-core machine (two model workers): at decode ≈ 50 tokens/s each (now ≈ 150), the
# first 30 kernels × 2 compilers took 4,100 s of case time in fp32 and 4,500 s in bf16 (49,404 run
# tokens compared per dtype), divmod_unsigned's expanded divisions alone 1,370 s;
# QGPU_MODEL_SHARD splits it; QGPU_MODEL_CHECKPOINT reuses a built checkpoint; QGPU_MODEL_TOKEN_BUDGET
# raises the 20,000 run tokens a case may generate (modpow's expanded multiplies need about 50,000).
# Usage: ci/model-leg.sh OUT_DIR [KERNEL ...]   (default: every kernel of kernels/catalog/)
#        QGPU_MODEL_SHARD=i/n runs check's shard i of n (the cases of a part of the catalog).
#        QGPU_MODEL_LEGS=fp32 for one dtype (default fp32,bf16).
#        QGPU_MODEL_CHECKPOINT=DIR a checkpoint `qgpu circuit build` wrote (default: check builds
#        one, 18 GB of disk while it is written).
#        QGPU_BIN=FILE the qgpu to run (default ./build/harness/qgpu; a copy keeps a long run
#        apart from a rebuild).
set -u
out="${1:?usage: ci/model-leg.sh OUT_DIR [KERNEL ...]}"
shift
qgpu=${QGPU_BIN:-./build/harness/qgpu}
legs="${QGPU_MODEL_LEGS:-fp32,bf16}"
mkdir -p "$out"
args=()
for k in "$@"; do args+=(--kernel "$k"); done
[ -n "${QGPU_MODEL_SHARD:-}" ] && args+=(--shard "$QGPU_MODEL_SHARD")
[ -n "${QGPU_MODEL_CHECKPOINT:-}" ] && args+=(--model-checkpoint "$QGPU_MODEL_CHECKPOINT")
[ -n "${QGPU_MODEL_TOKEN_BUDGET:-}" ] && args+=(--model-token-budget "$QGPU_MODEL_TOKEN_BUDGET")
"$qgpu" check --no-gpu --model "$legs" "${args[@]}" --report "$out/report.json" \
  --html "$out/report.html" --junit "$out/junit.xml" >"$out/check.log" 2>&1
rc=$?
tail -n 12 "$out/check.log"
# Positions compared: every model case that ran reports "N run tokens, 0 differ" (--check).
python3 - "$out/report.json" <<'EOF'
import json, re, sys
cases = json.load(open(sys.argv[1]))["cases"]
for leg in ("model-fp32", "model-bf16"):
    mine = [c for c in cases if c["backend"] == leg]
    if not mine:
        continue
    compared = sum(int(m.group(1)) for c in mine
                   for m in [re.search(r"--check: (\d+) run tokens", c["detail"])] if m)
    differ = sum(1 for c in mine if "--check: token" in c["detail"])
    ran = sum(1 for c in mine if "--check:" in c["detail"])
    print(f"{leg}: {ran} programs ran, {compared} run tokens compared, {differ} programs with a differing token; "
          + ", ".join(f"{v} {sum(1 for c in mine if c['verdict'] == v)}" for v in ("match", "mismatch", "inconclusive", "harness-error")))
EOF
exit $rc
