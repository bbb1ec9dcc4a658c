#!/usr/bin/env bash
# `qgpu bisect-run` under `git bisect run` on a planted regression (issue 9, item 6): a scratch git
# repository whose "project" is two shell scripts (build.sh copies src.sh to prog.sh; the case runs
# prog.sh and exits with qgpu's codes). Commit 8 introduces the bug (the case exits 1); commit 3's
# case is inconclusive (exit 4) and commit 4's build fails: both must be skipped, not blamed.
# git bisect must name commit 8. Then each answer on its own (0 good, 1 bad, 125 skip).
# Usage: bisect_cli_test.sh QGPU
set -u
QGPU=$(realpath "$1")
command -v git >/dev/null || { echo "SKIP: git is not installed"; exit 77; }
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
fail=0
check() {  # check WHAT WANT GOT
  if [ "$2" = "$3" ]; then echo "ok   $1"; else echo "FAIL $1: want $2, got $3"; fail=1; fi
}

cd "$dir"
git init -q .
git config user.email bisect@qgpu.invalid
git config user.name bisect-test
printf '[ -f broken ] && exit 1\ncp src.sh prog.sh\n' > build.sh
printf 'sh prog.sh\n' > case.sh
declare -a commits
for i in $(seq 1 12); do
  rm -f broken
  if [ "$i" -ge 8 ]; then echo 'exit 1' > src.sh; else echo 'exit 0' > src.sh; fi
  [ "$i" -eq 3 ] && echo 'exit 4' > src.sh
  [ "$i" -eq 4 ] && touch broken
  echo "$i" > version.txt
  git add -A && git commit -q -m "commit $i"
  commits[$i]=$(git rev-parse HEAD)
done

# Each answer at its commit.
step() { git checkout -q "${commits[$1]}"; "$QGPU" bisect-run "sh build.sh" -- sh case.sh 2>/dev/null; echo $?; }
check "a good commit is good (0)" 0 "$(step 1)"
check "a bad commit is bad (1)" 1 "$(step 12)"
check "an inconclusive case is skipped (125)" 125 "$(step 3)"
check "a failing build is skipped (125)" 125 "$(step 4)"
git checkout -q "${commits[12]}"
check "a harness error (exit 3) is bad" 1 "$("$QGPU" bisect-run true -- sh -c 'exit 3' 2>/dev/null; echo $?)"
check "--harness-error skip" 125 "$("$QGPU" bisect-run --harness-error skip true -- sh -c 'exit 3' 2>/dev/null; echo $?)"
check "a case that hangs is skipped" 125 "$("$QGPU" bisect-run --timeout 0.5 true -- sleep 30 2>/dev/null; echo $?)"
check "a case command that does not exist is skipped" 125 "$("$QGPU" bisect-run true -- /no/such/case 2>/dev/null; echo $?)"
check "--harness-error garbage stops git bisect (128)" 128 "$("$QGPU" bisect-run --harness-error maybe true -- true 2>/dev/null; echo $?)"
check "a command line that does not parse stops git bisect (128), not bad (2)" 128 "$("$QGPU" bisect-run --no-such-flag true -- true 2>/dev/null; echo $?)"
check "no case stops git bisect (128)" 128 "$("$QGPU" bisect-run true 2>/dev/null; echo $?)"
why=$("$QGPU" --json bisect-run "sh build.sh" -- sh case.sh 2>/dev/null | tr -d ' \n')
check "--json names the answer" '{"answer":"bad","exit":1,"reason":"case:mismatch(exit1)"}' "$why"

# The bisection itself.
git bisect start "${commits[12]}" "${commits[1]}" >/dev/null
git bisect run "$QGPU" bisect-run "sh build.sh" -- sh case.sh > bisect.log 2>&1
first=$(grep -o '^[0-9a-f]\{40\} is the first bad commit' bisect.log | cut -c1-40)
git bisect reset >/dev/null 2>&1
check "git bisect run finds commit 8" "${commits[8]}" "$first"
[ "$first" = "${commits[8]}" ] || cat bisect.log
exit $fail
