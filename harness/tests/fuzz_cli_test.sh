#!/usr/bin/env bash
# `qgpu fuzz` end to end (gen/, harness/cli/cmd_fuzz.cpp): each generator runs and summarises,
# --json is JSON, bad usage is exit 2, a missing compiler is inconclusive (4), and a planted
# miscompile (a clang wrapper that turns add.s32 into sub.s32 in the PTX) is found: exit 1, the
# failing kernel written under --out with its seed and policy, and a replay line on stderr.
# Usage: fuzz_cli_test.sh PATH/TO/qgpu   (needs clang-14; label tools)
set -u
qgpu="$1"
. "$(dirname "$0")/expect.sh"

expect program 0 '^fuzz program: 300 cases from seed 1 .* 300 match, .* 0 failed' -- \
  "$qgpu" fuzz --gen program --cases 300 --seed 1
# How the runs ended is counted, and the counts add up to the cases.
expect program-outcomes 0 '^  runs ended:( (Fault|Finished|StepLimit) [0-9]+)+$' -- \
  "$qgpu" fuzz --gen program --cases 50 --seed 1
if "$qgpu" --json fuzz --gen program --cases 50 --seed 1 | python3 -c 'import json,sys; j=json.load(sys.stdin); sys.exit(0 if sum(j["outcomes"].values())==50 else 1)'; then
  passed=$((passed + 1))
else
  failed=$((failed + 1)); echo "FAIL outcomes-sum"
fi
# --print writes each case before it runs: the program's header names its seed; the PTX is a module.
expect print-program 0 'seed=2' -- "$qgpu" fuzz --gen program --cases 1 --seed 2 --print
expect print-ptx 0 '^\.version' -- "$qgpu" fuzz --gen ptx --cases 1 --seed 2 --print
expect ptx 0 '^fuzz ptx: 100 cases from seed 7 .* 0 failed' -- "$qgpu" fuzz --gen ptx --cases 100 --seed 7
expect cuda-clang 0 '^fuzz cuda: 24 cases from seed 3 .* 0 failed' -- \
  "$qgpu" fuzz --gen cuda --compiler clang --cases 24 --batch 12 --seed 3
expect json 0 '"casesPerSecond"' -- "$qgpu" --json fuzz --gen program --cases 10
if "$qgpu" --json fuzz --gen program --cases 10 | python3 -c 'import json,sys; j=json.load(sys.stdin); sys.exit(0 if j["cases"]==10 and j["failed"]==0 else 1)'; then
  passed=$((passed + 1))
else
  failed=$((failed + 1)); echo "FAIL json-fields"
fi
expect bad-gen 2 'error\[Usage\].*--gen must be' -- "$qgpu" fuzz --gen csmith --cases 1
expect bad-policy 2 'error\[Usage\].*maxTopStmts' -- "$qgpu" fuzz --gen cuda --cases 1 --policy maxTopStmts=0
expect bad-batch 2 'error\[Usage\].*--batch' -- "$qgpu" fuzz --gen cuda --cases 1 --batch 0
expect no-compiler 4 'ToolMissing' -- env QGPU_NVCC="$tmp/no-such-nvcc" "$qgpu" fuzz --gen cuda --compiler nvcc --cases 2

# The planted miscompile: a clang that subtracts where the kernel adds.
cat >"$tmp/bad-clang" <<'SH'
#!/usr/bin/env bash
out=""
prev=""
for a in "$@"; do [ "$prev" = "-o" ] && out="$a"; prev="$a"; done
clang-14 "$@" || exit $?
sed -i 's/add\.s32/sub.s32/g' "$out"
SH
chmod +x "$tmp/bad-clang"
expect planted 1 'replay: qgpu fuzz --gen cuda --seed [0-9]+ --cases 1 --policy' -- \
  env QGPU_CLANG="$tmp/bad-clang" "$qgpu" fuzz --gen cuda --compiler clang --cases 16 --seed 1 --out "$tmp/found"
if ls "$tmp/found"/rk*.cu >/dev/null 2>&1 && grep -Eq '^// note: qgpu-gen cuda v[0-9]+ seed=' "$tmp/found"/rk*.cu &&
   grep -q 'differs from the generator' "$tmp/found"/rk*.cu.failure.txt; then
  passed=$((passed + 1))
else
  failed=$((failed + 1)); echo "FAIL planted-out: no failing kernel with its seed under --out"; ls -la "$tmp/found" 2>&1 | head
fi

# The kernel the planted miscompile failed on is a plain kernel file: with the real clang the
# normal harness runs it and matches the generator's expectation.
first=$(ls "$tmp/found"/rk*.cu 2>/dev/null | head -n 1)
expect run-found 0 'match' -- "$qgpu" run "${first:-$tmp/none.cu}" --compiler clang

# Random kernels exported for a GPU recording (qgpu gpu export --random): both compilers' PTX,
# the launch and the interpreter's image, which must first meet the generator's expectation — the
# planted miscompile stops the export, naming the case.
expect export-random 0 '^exported 8 cases \(0 without an interpreter result\)' -- \
  "$qgpu" gpu export --random 4 --seed 3 --out "$tmp/rand"
if [ "$(grep -c '^case rk[3-6] \(clang\|nvcc\)$' "$tmp/rand/manifest.txt")" = 8 ] &&
   [ "$(grep -c '^expect ' "$tmp/rand/manifest.txt")" = 8 ] && [ -f "$tmp/rand/rk6.nvcc.ptx" ]; then
  passed=$((passed + 1))
else
  failed=$((failed + 1)); echo "FAIL export-random-manifest"; head -20 "$tmp/rand/manifest.txt"
fi
expect export-random-planted 3 'rk[0-9]+ \(clang\): the interpreter differs from the generator' -- \
  env QGPU_CLANG="$tmp/bad-clang" "$qgpu" gpu export --random 16 --seed 1 --out "$tmp/rand-bad"
expect export-seed-without-random 2 'requires --random' -- "$qgpu" gpu export --seed 3 --out "$tmp/rand-y"
expect export-random-with-kernel 2 'excludes' -- \
  "$qgpu" gpu export --random 2 --kernel reverse --out "$tmp/rand-x"

finish fuzz_cli_test
