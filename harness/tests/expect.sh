# Sourced by the command-line tests (cli_test.sh, fuzz_cli_test.sh): a scratch folder removed on
# exit, the pass/fail counters, `expect` and `finish`.
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
passed=0
failed=0

# expect NAME CODE REGEX -- command...: runs the command, checks its exit code and that its
# combined output matches the extended regex.
expect() {
  local name="$1" code="$2" regex="$3"
  shift 4
  local out rc
  out=$("$@" 2>&1)
  rc=$?
  if [ "$rc" = "$code" ] && grep -Eq -- "$regex" <<<"$out"; then
    passed=$((passed + 1))
  else
    failed=$((failed + 1))
    echo "FAIL $name: exit $rc (want $code), output:"
    head -n 20 <<<"$out" | sed 's/^/    /'
  fi
}

# finish NAME: the summary line; the script's status is 0 only when nothing failed.
finish() {
  echo "$1: $passed passed, $failed failed"
  [ "$failed" = 0 ]
}
