#!/usr/bin/env bash
# End to end (label cpu): `qgpu bench report` on synthetic Google Benchmark JSON pairs, for its
# exit-code contract (harness/cli/cmd_bench.cpp): 0 no regression (same, or slower within the
# noise), 5 a real regression, 4 nothing comparable with the baseline, 2 a corrupt file; --json
# carries the verdicts; --html writes a page with the table and the plots.
# Usage: bench_cli_test.sh PATH/TO/qgpu
set -u
qgpu="$1"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
failed=0
fail() { echo "FAIL $*"; failed=$((failed + 1)); }

# bench FILE NAME T1 T2 ...: Google Benchmark JSON, one iteration run per repetition (ns).
bench() {
  local file="$1" name="$2"; shift 2
  local entries="" sep=""
  for t in "$@"; do
    entries+="$sep{\"name\": \"$name\", \"run_name\": \"$name\", \"run_type\": \"iteration\", \"real_time\": $t, \"cpu_time\": $t, \"time_unit\": \"ns\"}"
    sep=", "
  done
  echo "{\"benchmarks\": [$entries]}" >"$file"
}
bench "$tmp/base.json" BM_A 100 101 99 98 102
bench "$tmp/same.json" BM_A 100 99 101 97 103
bench "$tmp/noise.json" BM_A 70 130 125 80 120
bench "$tmp/slow.json" BM_A 130 131 129 133 132
bench "$tmp/other.json" BM_B 100 101 99 98 102
printf '{"benchmarks": [{"name": "BM_A", "real_ti' >"$tmp/corrupt.json"

expect() {  # expect WHAT EXIT PATTERN -- ARGS...
  local what="$1" want="$2" pattern="$3"; shift 4
  local out rc
  out=$("$qgpu" "$@" 2>&1)
  rc=$?
  { [ "$rc" = "$want" ] && grep -q -- "$pattern" <<<"$out"; } ||
    fail "$what: exit $rc (want $want), output: $out"
}
expect same 0 ' same$' -- bench report "$tmp/same.json" --baseline "$tmp/base.json"
expect noise 0 'within-noise' -- bench report "$tmp/noise.json" --baseline "$tmp/base.json"
expect regression 5 'REGRESSION' -- bench report "$tmp/slow.json" --baseline "$tmp/base.json"
expect json 5 '"change": "REGRESSION"' -- --json bench report "$tmp/slow.json" --baseline "$tmp/base.json"
expect nothing-comparable 4 'no-baseline' -- bench report "$tmp/other.json" --baseline "$tmp/base.json"
expect corrupt 2 'ReportInvalid' -- bench report "$tmp/corrupt.json"
expect corrupt-baseline 2 'ReportInvalid' -- bench report "$tmp/same.json" --baseline "$tmp/corrupt.json"
expect no-gate 0 'BM_A' -- bench report "$tmp/slow.json"
"$qgpu" bench report "$tmp/slow.json" --baseline "$tmp/base.json" --html "$tmp/b.html" >/dev/null
grep -q 'data-bench="BM_A" data-change="REGRESSION"' "$tmp/b.html" && grep -q '<svg' "$tmp/b.html" ||
  fail "the HTML page lacks the regression row or the plots"

if [ "$failed" != 0 ]; then echo "$failed failed"; exit 1; fi
echo "bench_cli_test: all passed"
