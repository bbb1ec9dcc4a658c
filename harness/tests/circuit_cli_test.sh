#!/usr/bin/env bash
# qgpu/harness/tests/circuit_cli_test.sh — `qgpu circuit plan` end to end (label tools): the
# stage plan (--of stages) on both shapes, the refusal of 2b (the front end's layer 2 needs 26
# heads of 16) and of a too-small override, naming budget and layer; the execute pipeline's plan
# (the default) against 2b and compact; the JSON form; usage errors.
# Figures are circuit/tests/plan_test.cpp's and pipeline_spec_test.cpp's hand counts.
# Usage: circuit_cli_test.sh path/to/qgpu
set -u
qgpu="$1"
source "$(dirname "$0")/expect.sh"
refused="$(dirname "$0")/data/model_refused/many_loops.cu"

expect compact-fits 0 'fits compact' -- "$qgpu" circuit plan --of stages --shape compact
expect compact-shape 0 'shape compact: hidden 1617, 26 heads of 128/128, MLP 4944' -- \
  "$qgpu" circuit plan --of stages --shape compact
expect compact-alu-s1 0 '^6 +alu +1 +0 +4300 +1617' -- "$qgpu" circuit plan --of stages --shape compact
expect compact-bus 0 'alu bus by liveness: peak 1086, span 1086 dims \(one field per value: 2130\)' -- \
  "$qgpu" circuit plan --of stages --shape compact
expect 2b-refused 4 'error\[OverLimit\].*layer 2 \(front end layer 2\) needs 26 heads, the shape has 16' -- \
  "$qgpu" circuit plan --of stages --shape 2b
expect 2b-table 4 '^2 +front end +2 +26 .* heads' -- "$qgpu" circuit plan --of stages --shape 2b
# The ALU's stage alone fits 2b's residual since its result word begins in S1 (alu_stage.h).
expect 2b-alu-dims-fit 4 '^6 +alu +1 +0 +4300 +1617 *$' -- "$qgpu" circuit plan --of stages --shape 2b
expect 2b-default 4 'shape 2b: hidden 2048, 16 heads of 128/128, MLP 6144' -- "$qgpu" circuit plan --of stages
expect units-too-few 4 'layer 7 \(alu layer 2\) needs 4944 MLP units, the shape has 4943' -- \
  "$qgpu" circuit plan --of stages --shape compact --units 4943
expect dims-too-few 4 'layer 6 \(alu layer 1\) needs 1617 residual dims, the shape has 1616' -- \
  "$qgpu" circuit plan --of stages --shape compact --hidden 1616
expect json-fits 0 '"fits": true' -- "$qgpu" --json circuit plan --of stages --shape compact
expect json-refused 4 '"kind": "OverLimit"' -- "$qgpu" --json circuit plan --of stages --shape 2b
expect unknown-shape 2 "unknown shape '7b' \(known: compact, 2b\)" -- "$qgpu" circuit plan --of stages --shape 7b
expect negative-override 2 '--heads must be positive' -- "$qgpu" circuit plan --of stages --heads -1
expect no-subcommand 2 'A subcommand is required' -- "$qgpu" circuit
# The execute pipeline (the default) on its layout by liveness: 1,940 dims, its peak live, with the
# wide fields placed first (3,444 one field per value; pipeline_spec_test audits the plan), within 2b's 2,048, so 2b is refused at the front
# end's heads (layer 2); compact holds it.
expect pipeline-2b 4 'layer 2 \(front end\+select\+control layer 2\) needs 28 heads, the shape has 16' -- \
  "$qgpu" circuit plan
expect pipeline-compact 0 'shape compact: hidden 1940, 35 heads of 128/128, MLP 4957' -- \
  "$qgpu" circuit plan --shape compact
expect pipeline-s2 0 '^7 +control\+alu +2 +0 +4957 +1940 +1904' -- "$qgpu" circuit plan --of pipeline --shape compact
expect pipeline-layout 0 'span 1940 \(peak live 1940; one field per value 3444\)' -- \
  "$qgpu" circuit plan --shape compact
# With memory ops: 18 layers, 1,701 dims (4,713 one field per value: the op class's 2 and the ALU's
# op groups' 7 more; with those guards the ALU's bus is 690 dims, its groups' fields on shared dims).
expect memory-pipeline 0 'span 1701 \(peak live 1701; one field per value 4713\)' -- \
  "$qgpu" circuit plan --of memory-pipeline --shape compact
expect memory-pipeline-select 0 '^13 +control\+select' -- "$qgpu" circuit plan --of memory-pipeline --shape compact
# The leg's pipeline (memory ops, atomics with their regrec, warp ops, mul and mad): 32 layers,
# 1,994 dims (peak live 1,980: the multiplier at 15; the atomics' own fields and their pairs'
# masks share dims by kind, the ALU's bus, the memory stage's address path and the warp ops' fields
# by the op's class, the ALU's op groups by their group, the multiplier's stages each on their own
# fields, and attention-written fields live from the pad restore right before their writer,
# circuit/layout.h), the memory stage's last layer at 14, the multiplier (two lanes at a time:
# 15..19, 19..23), one result stage for the multiplies' and the atomics' regrec at 23..26, the
# select at 27.
expect leg-pipeline 0 'span 1994 \(peak live 1980; one field per value 12499\)' -- \
  "$qgpu" circuit plan --of leg --shape compact
expect leg-pipeline-warp 0 '^5 +control\+alu\+memory\+warp +0 ' -- "$qgpu" circuit plan --of leg --shape compact
expect leg-pipeline-prefix 0 '^14 +memory +9 ' -- "$qgpu" circuit plan --of leg --shape compact
expect leg-pipeline-mul 0 '^19 +mul +4 ' -- "$qgpu" circuit plan --of leg --shape compact
expect leg-pipeline-regrec 0 '^23 +mul\+regrec +8 ' -- "$qgpu" circuit plan --of leg --shape compact
expect leg-pipeline-regrec-last 0 '^26 +regrec +11 ' -- "$qgpu" circuit plan --of leg --shape compact
expect leg-pipeline-select 0 '^27 +select +0 ' -- "$qgpu" circuit plan --of leg --shape compact
# --live: where the residual goes, per layer by field group (the ALU's bus, one field, and its
# result words lead at 6).
expect leg-live 0 '^6 +alu 818 rf 532 ' -- "$qgpu" circuit plan --of leg --shape compact --live
expect leg-live-json 0 '"liveByGroup": \{' -- "$qgpu" --json circuit plan --of leg --shape compact
# --fields L: the fields behind layer L's live dims, with their ranges and kinds (the ALU's bus at
# 6, every ALU kind's bit; the warp ops' one-hot beside it, on shared dims).
expect leg-fields 0 'alu\.bus +690  \[L5\.mlp, L8\.mlp\)  0xfe80' -- \
  "$qgpu" circuit plan --of leg --shape compact --fields 6
expect leg-fields-warp 0 'warp\.op +7  \[L6\.mlp, L8\.mlp\)  0x100' -- \
  "$qgpu" circuit plan --of leg --shape compact --fields 6
expect leg-fields-json 0 '"lastRead": "L8\.mlp"' -- \
  "$qgpu" --json circuit plan --of leg --shape compact --fields 6
expect fields-past-the-plan 2 'the plan has layers 0\.\.31' -- \
  "$qgpu" circuit plan --of leg --shape compact --fields 32
expect fields-of-stages 2 'a stages plan has no layout' -- \
  "$qgpu" circuit plan --of stages --shape compact --fields 1
expect fields-negative 2 'fields' -- "$qgpu" circuit plan --of leg --fields -1
expect pipeline-json 0 '"of": "pipeline"' -- "$qgpu" --json circuit plan --shape compact
expect unknown-plan 2 'bogus not in' -- "$qgpu" circuit plan --of bogus
# `qgpu circuit plan --of leg --shape 2b`: the leg packed into 16 heads and 6,144 units a layer
# (circuit/pack.h) at dk 128 fits within 45 layers (38) and 1,994 of 2,048 dims; a shape of 8
# heads is refused by the packing, naming its layers; 30 layers are too few.
expect plan-2b 0 '^packed into 38 layers of 16 heads and 6144 MLP units' -- \
  "$qgpu" circuit plan --of leg --shape 2b
expect plan-2b-fits 0 '^fits 2b' -- "$qgpu" circuit plan --of leg --shape 2b
expect plan-2b-json 0 '"packing": \{' -- "$qgpu" --json circuit plan --of leg --shape 2b
expect plan-2b-heads-8 4 'error\[OverLimit\]: pack: the circuit needs [0-9]+ layers of 8 heads' -- \
  "$qgpu" circuit plan --of leg --shape 2b --heads 8
# `circuit build`: compact (below: packed with --heads / --units; the compact checkpoint itself
# and one at 2b's widths are harness_model_leg_test's, 2b itself ci/model-leg-2b.sh's: 13 GB).
# 2b has its own widths: reshaping it is refused before anything is written, as is an unknown
# shape or key head dim.
expect build-2b-reshaped 2 "error\[Usage\].*--heads, --units and --key-head-dim reshape compact; 2b has its own widths" -- \
  "$qgpu" circuit build --shape 2b --heads 8 --units 6144 --out "$tmp/leg2b"
expect build-2b-dk 2 "reshape compact; 2b has its own widths" -- \
  "$qgpu" circuit build --shape 2b --key-head-dim 64 --out "$tmp/leg2b"
expect build-unknown-shape 2 "error\[Usage\]: unknown shape '7b' \(known: compact, 2b\)" -- \
  "$qgpu" circuit build --shape 7b --out "$tmp/leg2b"
expect build-dk-96 2 'key-head-dim' -- "$qgpu" circuit build --key-head-dim 96 --out "$tmp/leg2b"
[ -e "$tmp/leg2b" ] && { failed=$((failed + 1)); echo "FAIL build-2b wrote $tmp/leg2b"; }
expect build-no-out 2 '--out is required' -- "$qgpu" circuit build
expect build-heads-alone 2 '--heads and --units go together' -- \
  "$qgpu" circuit build --heads 16 --out "$tmp/x"
expect build-pack-too-few-layers 4 "pack: the circuit needs 40 layers of 16 heads and 6144 MLP units.*allows 30" -- \
  "$qgpu" circuit build --heads 16 --units 6144 --layers 30 --out "$tmp/x"
expect build-step-limit 2 'step-limit' -- "$qgpu" circuit build --out "$tmp/x" --step-limit 1000001
# `run --backend model` runs the circuit target's program (divisions and mulhi expanded, as
# `--expand-division --expand-mulhi` do on any backend; mul and mad are the pipeline's own); a
# mulhi the expansion cannot fit (harness/tests/data/model_refused: its split would take the
# program past 32 blocks) is OverLimit naming its PTX line before any model is built;
# --check belongs to the model backend. (Every op of the machine runs through the model, the
# spill slots too: harness_model_leg_test.)
expect run-expand-multiply 0 "^multiplication expanded: 0 ops into chains, 1 into loops, 0 into halves" -- \
  "$qgpu" run atomic_cas_mul --expand-multiply
expect run-expand-mulhi 0 "^multiplication expanded: 0 ops into chains, 0 into loops, 0 into halves" -- \
  "$qgpu" run atomic_cas_mul --expand-mulhi
expect run-expand-mulhi-halves 0 "^multiplication expanded: 0 ops into chains, 0 into loops, 4 into halves" -- \
  "$qgpu" run int64_ops --expand-mulhi
expect run-model-expansion-refused 4 "error\[OverLimit\].*expanding \`mulhi.s .*PTX line [0-9]+\) into 16-bit halves: the program would need 34 program blocks" -- \
  "$qgpu" run "$refused" --backend model
# `check --model`: the legs are fp32 and bf16; a checkpoint needs --model; a directory that is no
# leg checkpoint is refused before any case runs. (The rows themselves: harness_model_leg_test.)
expect check-model-unknown 2 "--model 'fp16': the model legs are fp32 and bf16" -- \
  "$qgpu" check --no-gpu --kernel popcount --model fp16
expect check-model-checkpoint-alone 2 '--model-checkpoint needs --model' -- \
  "$qgpu" check --no-gpu --kernel popcount --model-checkpoint "$tmp"
expect check-model-budget-alone 2 '--model-token-budget needs --model' -- \
  "$qgpu" check --no-gpu --kernel popcount --model-token-budget 100
expect check-model-budget-zero 2 'model-token-budget' -- \
  "$qgpu" check --no-gpu --kernel popcount --model fp32 --model-token-budget 0
expect check-model-bad-checkpoint 2 'error\[Checkpoint\].*circuit.json: missing' -- \
  "$qgpu" check --no-gpu --kernel popcount --model fp32,bf16 --model-checkpoint "$tmp"
# `circuit margins`: a kernel the circuit target cannot be built for is refused before any model is
# loaded; a directory that is no leg checkpoint is a Checkpoint error (the measurement:
# harness_model_leg_test).
expect margins-refused 4 "error\[OverLimit\].*into 16-bit halves" -- \
  "$qgpu" circuit margins "$refused" --checkpoint "$tmp"
expect margins-bad-checkpoint 2 'error\[Checkpoint\].*circuit.json: missing' -- \
  "$qgpu" circuit margins popcount --checkpoint "$tmp"
expect run-check-interp 2 '--check and --checkpoint are --backend model' -- "$qgpu" run dot --check
expect run-bad-checkpoint 2 'error\[Checkpoint\].*circuit.json: missing' -- \
  "$qgpu" run popcount --backend model --checkpoint "$tmp"

finish circuit_cli_test
