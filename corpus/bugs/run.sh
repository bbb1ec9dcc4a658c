#!/usr/bin/env bash
# Runs the CUDA entries of a bug corpus (corpus/bugs/README.md) through `qgpu run`, with every
# compiler the entry's `// note: compilers:` line names (the PTX entries, case.ptx, are run by
# ptxeval_corpus_bugs_test). Per entry and compiler: `fixed` must match (qgpu exit 0), `open`
# must still fail (exit 1 mismatch or 3 harness error; a pass is a failure: mark it fixed);
# exit 4 (the compiler is missing) is reported and skipped, never passed. Any other outcome, a
# missing note or a name that is not the directory's is a failure.
# Usage: run.sh QGPU [CORPUS_DIR]   (default: the directory of this script)
# Exit: 0 every entry as its status says, 1 an entry is not, 2 usage.
set -u
[ $# -ge 1 ] || { echo "usage: run.sh QGPU [CORPUS_DIR]"; exit 2; }
QGPU=$1
corpus=${2:-$(dirname "$0")}
fail=0 ran=0 skipped=0
err=$(mktemp)
trap 'rm -f "$err"' EXIT
note() { sed -n "s/^\/\/ note: $1: //p" "$2" | head -1; }
for file in "$corpus"/*/kernel.cu; do
  [ -e "$file" ] || continue
  name=$(basename "$(dirname "$file")")
  for key in qgpu-bug wrong found-by status compilers; do
    [ -n "$(note "$key" "$file")" ] || { echo "FAIL $name: no '// note: $key:' line"; fail=1; }
  done
  [ "$(note qgpu-bug "$file")" = "$name" ] || { echo "FAIL $name: qgpu-bug names '$(note qgpu-bug "$file")'"; fail=1; }
  status=$(note status "$file")
  for compiler in $(note compilers "$file"); do
    "$QGPU" run "$file" --compiler "$compiler" > /dev/null 2> "$err" </dev/null
    rc=$?
    why=$(head -c 300 "$err")
    case "$status:$rc" in
      fixed*:0) echo "ok   $name ($compiler): matches (fixed)"; ran=$((ran + 1)) ;;
      open:1 | open:3) echo "ok   $name ($compiler): still fails (open, exit $rc)"; ran=$((ran + 1)) ;;
      *:4) echo "skip $name ($compiler): inconclusive (exit 4): $why"; skipped=$((skipped + 1)) ;;
      open:0) echo "FAIL $name ($compiler): open but it matches now: mark it 'fixed <commit>'"; fail=1 ;;
      *) echo "FAIL $name ($compiler): status '$status', qgpu run exit $rc: $why"; fail=1 ;;
    esac
  done
done
echo "corpus $corpus: $ran CUDA entry runs as their status says, $skipped skipped, failures: $fail"
exit $fail
