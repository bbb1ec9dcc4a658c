#!/usr/bin/env bash
# qgpu/harness/tests/circuit_cli_test.sh — `qgpu circuit plan` end to end (label tools): the
# budget table on both shapes, the refusal of 2b (the front end's layer 2 needs 26 heads of 16)
# and of a too-small override, naming budget and layer; the JSON form; usage errors.
# Figures are circuit/tests/plan_test.cpp's hand counts.
# Usage: circuit_cli_test.sh path/to/qgpu
set -u
qgpu="$1"
source "$(dirname "$0")/expect.sh"

expect compact-fits 0 'fits compact' -- "$qgpu" circuit plan --shape compact
expect compact-shape 0 'shape compact: hidden 2249, 26 heads of 128/128, MLP 4944' -- \
  "$qgpu" circuit plan --shape compact
expect compact-alu-s1 0 '^6 +alu +1 +0 +4412 +2249' -- "$qgpu" circuit plan --shape compact
expect compact-bus 0 'alu bus by liveness: peak 1846, span 1906 dims \(one field per value: 2378\)' -- \
  "$qgpu" circuit plan --shape compact
expect 2b-refused 4 'error\[OverLimit\].*layer 2 \(front end layer 2\) needs 26 heads, the shape has 16' -- \
  "$qgpu" circuit plan --shape 2b
expect 2b-table 4 '^2 +front end +2 +26 .* heads' -- "$qgpu" circuit plan --shape 2b
expect 2b-dims-over 4 '^6 +alu +1 +0 +4412 +2249  dims' -- "$qgpu" circuit plan --shape 2b
expect 2b-default 4 'shape 2b: hidden 2048, 16 heads of 128/128, MLP 6144' -- "$qgpu" circuit plan
expect units-too-few 4 'layer 7 \(alu layer 2\) needs 4944 MLP units, the shape has 4943' -- \
  "$qgpu" circuit plan --shape compact --units 4943
expect dims-too-few 4 'layer 6 \(alu layer 1\) needs 2249 residual dims, the shape has 2248' -- \
  "$qgpu" circuit plan --shape compact --hidden 2248
expect json-fits 0 '"fits": true' -- "$qgpu" --json circuit plan --shape compact
expect json-refused 4 '"kind": "OverLimit"' -- "$qgpu" --json circuit plan --shape 2b
expect unknown-shape 2 "unknown shape '7b' \(known: compact, 2b\)" -- "$qgpu" circuit plan --shape 7b
expect negative-override 2 '--heads must be positive' -- "$qgpu" circuit plan --heads -1
expect no-subcommand 2 'A subcommand is required' -- "$qgpu" circuit

finish circuit_cli_test
