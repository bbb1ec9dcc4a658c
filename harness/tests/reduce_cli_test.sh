#!/usr/bin/env bash
# `qgpu reduce` end to end (issue 9, item 5).
#   ptx  (label cpu; no python): a planted bug in PTX (harness/tests/data/reduce/planted.ptx) with a
#        predicate that runs qgpu itself (qgpu compile lowers it): lines before and after, the
#        result still lowers; --json; the refusals (missing file, empty file, predicate not found,
#        not interesting, nondeterministic, wrong extension) with their exit code and kind.
#   cuda (label tools, clang-14): a generated 100-line kernel (data/reduce/rk_planted.cu, made by
#        gen/cuda_gen.h, seed and policy in its note line) with "it still multiplies two loads and
#        qgpu compile --compiler clang still compiles it": it shrinks to a few lines.
# Usage: reduce_cli_test.sh ptx|cuda QGPU
set -u
mode=$1
QGPU=$(realpath "$2")
data=$(realpath "$(dirname "$0")/data/reduce")
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
fail=0
check() {  # check WHAT WANT GOT
  if [ "$2" = "$3" ]; then echo "ok   $1"; else echo "FAIL $1: want $2, got $3"; fail=1; fi
}
# A field of qgpu's pretty-printed JSON (one "key": value per line), without python.
field() { sed -n "s/^ *\"$1\": \"\{0,1\}\([^\",]*\)\"\{0,1\},\{0,1\}\$/\1/p" | head -1; }

if [ "$mode" = ptx ]; then
  cp "$data/planted.ptx" "$dir/k.ptx"
  # One --param 0 per .param line the candidate still has.
  pred_any="\"$QGPU\" compile k.ptx \$(grep '^[[:space:]]*[.]param' k.ptx | sed 's/.*/--param 0/') >/dev/null 2>&1 && grep -q 'mul.wide.u32' k.ptx && grep -q 'shr.u64.*, 0;' k.ptx"
  out=$("$QGPU" --json reduce "$dir/k.ptx" --predicate "$pred_any" --out "$dir/small.ptx" --quiet)
  check "reduce exits 0" 0 $?
  before=$(echo "$out" | field linesBefore); after=$(echo "$out" | field linesAfter)
  echo "planted PTX: $before -> $after lines, $(echo "$out" | field predicateCalls) predicate calls"
  check "the original has 39 lines" 39 "$before"
  [ "$after" -le 18 ] && check "reduced to at most 18 lines (7 of them the header and directives)" yes yes || check "reduced to at most 18 lines" "<=18" "$after"
  (cd "$dir" && cp small.ptx k.ptx && sh -c "$pred_any"); check "the result still satisfies the predicate" 0 $?
  grep -q 'k_param_1\|k_param_2' "$dir/small.ptx"; check "unused parameters are gone" 1 $?
  grep -q 'add.s32\|xor.b32\|setp' "$dir/small.ptx"; check "unrelated code is gone" 1 $?
  cat "$dir/small.ptx"

  # Refusals: exit 2 and the kind.
  "$QGPU" reduce "$dir/missing.ptx" --predicate true 2>"$dir/err"; check "missing file: exit 2" 2 $?
  grep -q 'error\[Io\]' "$dir/err"; check "missing file: Io" 0 $?
  : > "$dir/empty.ptx"
  "$QGPU" reduce "$dir/empty.ptx" --predicate true 2>"$dir/err"; check "empty file: exit 2" 2 $?
  grep -q 'error\[Usage\].*empty' "$dir/err"; check "empty file: Usage" 0 $?
  "$QGPU" reduce "$data/planted.ptx" --predicate /no/such/predicate 2>"$dir/err"; check "predicate not found: exit 2" 2 $?
  grep -q 'not found' "$dir/err"; check "predicate not found: says so" 0 $?
  "$QGPU" reduce "$data/planted.ptx" --predicate false 2>"$dir/err"; check "not interesting: exit 2" 2 $?
  cnt="$dir/count"
  "$QGPU" reduce "$data/planted.ptx" --predicate "n=\$(cat $cnt 2>/dev/null || echo 0); echo \$((n+1)) > $cnt; [ \$n -eq 0 ]" 2>"$dir/err"
  check "nondeterministic: exit 2" 2 $?
  grep -q nondeterministic "$dir/err"; check "nondeterministic: says so" 0 $?
  cp "$data/planted.ptx" "$dir/k.txt"
  "$QGPU" reduce "$dir/k.txt" --predicate true 2>"$dir/err"; check "not .cu/.ptx: exit 2" 2 $?
  "$QGPU" --json reduce "$dir/missing.ptx" --predicate true 2>/dev/null > "$dir/j"
  check "--json error kind" Io "$(field kind < "$dir/j")"
  exit $fail
fi

if [ "$mode" = cuda ]; then
  command -v clang-14 >/dev/null || [ -x /usr/lib/llvm-14/bin/clang ] || { echo "SKIP: no clang-14"; exit 77; }
  cp "$data/rk_planted.cu" "$dir/rk_planted.cu"
  pred="grep -Eq 'in\\[[^]]*\\] \\* in\\[' rk_planted.cu && \"$QGPU\" compile rk_planted.cu --compiler clang --ptx >/dev/null 2>&1"
  mkdir "$dir/out"  # the result keeps its name: a kernel file's stem is its kernel's name
  out=$("$QGPU" --json reduce "$dir/rk_planted.cu" --predicate "$pred" --timeout 60 --out "$dir/out/rk_planted.cu" --quiet)
  check "reduce exits 0" 0 $?
  before=$(echo "$out" | field linesBefore); after=$(echo "$out" | field linesAfter)
  echo "planted CUDA: $before -> $after lines, $(echo "$out" | field predicateCalls) predicate calls"
  cat "$dir/out/rk_planted.cu"
  body=$(grep -vc '^//' "$dir/out/rk_planted.cu")
  [ "$before" -ge 90 ] && check "the original has 90+ lines" yes yes || check "the original has 90+ lines" ">=90" "$before"
  [ "$body" -le 6 ] && check "at most 6 lines of code are left" yes yes || check "at most 6 lines of code left" "<=6" "$body"
  "$QGPU" compile "$dir/out/rk_planted.cu" --compiler clang --ptx >/dev/null 2>&1; check "the result still compiles" 0 $?
  grep -q 'param: acc\|unsigned\* acc' "$dir/out/rk_planted.cu"; check "the unused parameter acc left the signature and the header" 1 $?
  exit $fail
fi
echo "usage: reduce_cli_test.sh ptx|cuda QGPU"; exit 2
