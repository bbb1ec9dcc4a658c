#!/usr/bin/env bash
# The bug corpus's CUDA runner (corpus/bugs/run.sh) on the real corpus and on its own fixtures
# (harness/tests/data/corpus_bugs/): a fixed entry that matches passes; the same entry with one
# expected word changed (a tampered expectation) and the same entry marked open although it
# passes are each failures — so a runner that passes everything cannot pass this test.
# Usage: corpus_bugs_cli_test.sh QGPU   (label tools: clang-14 and nvcc)
set -u
QGPU=$(realpath "$1")
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
fixtures="$here/data/corpus_bugs"
fail=0
check() { if [ "$2" = "$3" ]; then echo "ok   $1"; else echo "FAIL $1: want exit $2, got $3"; fail=1; fi; }
bash "$root/corpus/bugs/run.sh" "$QGPU" "$root/corpus/bugs"; check "the corpus: every entry as its status says" 0 $?
bash "$root/corpus/bugs/run.sh" "$QGPU" "$fixtures/good"; check "fixture: a fixed entry that matches" 0 $?
bash "$root/corpus/bugs/run.sh" "$QGPU" "$fixtures/tampered"; check "fixture: a tampered expectation is caught" 1 $?
bash "$root/corpus/bugs/run.sh" "$QGPU" "$fixtures/open-passes"; check "fixture: an open entry that passes is caught" 1 $?
exit $fail
