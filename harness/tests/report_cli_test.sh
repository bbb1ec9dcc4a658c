#!/usr/bin/env bash
# End to end (label tools: clang-14): the report files of `qgpu check` and `qgpu report merge`
# on a small catalog with one kernel whose expectation was tampered with (vadd), so that every
# verdict the CI systems key on appears. Pins down:
#   - the JUnit XML parses (python3 xml.dom.minidom) and shows the tampered kernel as <failure>,
#     inconclusive cases as <skipped>, its counts those of the JSON report;
#   - the HTML page's count cells equal the JSON report's tallies;
#   - 4 shards (round robin, then balanced by the first run's times) merged == the unsharded
#     report but for times and hosts; GoogleTest's variables shard and touch the status file;
#   - a run killed mid-way leaves a report marked partial holding the cases done so far, which
#     parses and which merge refuses (ReportInvalid);
#   - `check --out DIR` records a run that `qgpu audit DIR` confirms 1:1 (exit 0), and tampered
#     copies of it are caught: a run token (exit 1, its position and meaning), a manifest digest
#     (exit 1), an input (a parameter value: the input digest and the catalog's inputs; exit 1),
#     another trace version (exit 2, TraceInvalid);
#   - `check` with stderr not a terminal draws no progress bar;
#   - `run --json` prints a version-2 run report that `report merge` reads.
# Usage: report_cli_test.sh PATH/TO/qgpu
set -u
qgpu="$1"
src="$(cd "$(dirname "$0")/../.." && pwd)"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
failed=0
fail() { echo "FAIL $*"; failed=$((failed + 1)); }

# A source tree whose catalog is eight kernels, vadd's expectation off by one.
mkdir -p "$tmp/root/kernels/catalog"
for k in vadd dot_atomic saxpy reverse popcount gcd matmul2x2 warp_vote; do
  cp "$src/kernels/catalog/$k.cu" "$tmp/root/kernels/catalog/"
done
sed -i 's|^// expect: out = 11 -18|// expect: out = 12 -18|' "$tmp/root/kernels/catalog/vadd.cu"
grep -q '^// expect: out = 12 -18' "$tmp/root/kernels/catalog/vadd.cu" || fail "vadd not tampered"
run() { "$qgpu" --root "$tmp/root" "$@"; }

run check --compiler clang --report "$tmp/u.json" --junit "$tmp/u.xml" --html "$tmp/u.html" \
    --manifest "$tmp/m.json" >"$tmp/u.out" 2>&1
rc=$?
[ "$rc" = 1 ] || { fail "unsharded check exit $rc (want 1: vadd mismatches)"; cat "$tmp/u.out"; }

python3 - "$tmp" <<'PY' || fail "report checks (above)"
import json, sys, xml.dom.minidom
from html.parser import HTMLParser
tmp = sys.argv[1]
u = json.load(open(f"{tmp}/u.json"))
m = json.load(open(f"{tmp}/m.json"))
bad = []
def want(cond, what):
    if not cond: bad.append(what)
cases = u["cases"]
want(u["version"] == 2 and not u["partial"], "report version 2, complete")
want(len(cases) == 16, f"16 cases (8 kernels x clang x 2 legs), got {len(cases)}")
want(m["magic"] == "qgpu-manifest" and len(m["cases"]) == 16 and not m["partial"], "manifest")
want(all(c["programDigest"].startswith("fnv1a64:") for c in m["cases"]), "program digests")
want(all(c["launch"]["blockX"] > 0 for c in m["cases"]), "launches")
counts = {v: sum(c["verdict"] == v for c in cases) for v in ("match", "mismatch", "inconclusive", "harness-error")}
vadd = [c for c in cases if c["kernel"] == "vadd" and c["backend"] == "interp"]
want(len(vadd) == 1 and vadd[0]["verdict"] == "mismatch", "vadd on the interpreter mismatches")

doc = xml.dom.minidom.parse(f"{tmp}/u.xml")
root = doc.documentElement
want(root.tagName == "testsuites", "root <testsuites>")
want(int(root.getAttribute("tests")) == 16, "16 testcases")
want(int(root.getAttribute("failures")) == counts["mismatch"], "failures == mismatches")
want(int(root.getAttribute("skipped")) == counts["inconclusive"], "skipped == inconclusive")
want(int(root.getAttribute("errors")) == counts["harness-error"], "errors == harness errors")
failures = doc.getElementsByTagName("failure")
want(len(failures) == counts["mismatch"], "one <failure> per mismatch")
names = [f.parentNode.getAttribute("name") + "/" + f.parentNode.getAttribute("classname") for f in failures]
want("vadd/qgpu.interp.clang" in names, f"vadd's <failure> in qgpu.interp.clang, got {names}")
want(any("expected" in f.getAttribute("message") or "out" in f.getAttribute("message") for f in failures),
     "the failure message is the first difference")
want(len(doc.getElementsByTagName("skipped")) == counts["inconclusive"], "one <skipped> per inconclusive")

class Counts(HTMLParser):
    def __init__(self):
        super().__init__(); self.key = None; self.total = {}; self.cells = {}
    def handle_starttag(self, tag, attrs):
        a = dict(attrs)
        if "data-total" in a: self.key = ("total", a["data-total"])
        elif "data-verdict" in a: self.key = (a["data-leg"], a["data-compiler"], a["data-verdict"])
    def handle_data(self, data):
        if self.key: self.cells[self.key] = int(data); self.key = None
h = Counts(); h.feed(open(f"{tmp}/u.html").read())
for v, n in counts.items():
    want(h.cells.get(("total", v)) == n, f"HTML total {v} == {n}, got {h.cells.get(('total', v))}")
for t in u["tallies"]:
    for v, key in (("match", "match"), ("mismatch", "mismatch"), ("inconclusive", "inconclusive"), ("harness-error", "harnessError")):
        want(h.cells.get((t["backend"], t["compiler"], v)) == t[key], f"HTML {t['backend']} {v}")
for b in bad: print("  -", b)
sys.exit(1 if bad else 0)
PY

# Sharded: round robin, then balanced by the unsharded run's times.
for mode in plain balanced; do
  extra=()
  [ "$mode" = balanced ] && extra=(--balance "$tmp/u.json")
  list=()
  for i in 0 1 2 3; do
    run check --compiler clang --shard "$i/4" "${extra[@]}" --report "$tmp/$mode$i.json" >/dev/null 2>&1
    rc=$?
    [ "$rc" = 0 ] || [ "$rc" = 1 ] || [ "$rc" = 4 ] || fail "$mode shard $i exit $rc"
    list+=("$tmp/$mode$i.json")
  done
  run report merge "${list[@]}" --out "$tmp/$mode-merged.json" --junit "$tmp/$mode-merged.xml" \
      >"$tmp/merge.out" 2>&1
  rc=$?
  [ "$rc" = 1 ] || { fail "$mode merge exit $rc (want 1, as unsharded)"; cat "$tmp/merge.out"; }
  python3 - "$tmp/u.json" "$tmp/$mode-merged.json" <<'PY' || fail "$mode: merged != unsharded"
import json, sys
def norm(path):
    d = json.load(open(path))
    for k in ("startedAt", "finishedAt", "wallSeconds", "provenance"): d.pop(k)
    for c in d["cases"]:
        c.pop("wallSeconds"); c.pop("cpuSeconds")
    return d
a, b = norm(sys.argv[1]), norm(sys.argv[2])
if a != b:
    for k in a:
        if a[k] != b.get(k): print("  differs:", k)
    sys.exit(1)
PY
done
python3 -c 'import xml.dom.minidom,sys; xml.dom.minidom.parse(sys.argv[1])' "$tmp/plain-merged.xml" ||
  fail "merged JUnit does not parse"

# Merge refuses a missing shard and a foreign file, with their kinds.
out=$(run report merge "$tmp/plain0.json" "$tmp/plain1.json" "$tmp/plain2.json" --out "$tmp/x.json" 2>&1)
rc=$?
{ [ "$rc" = 2 ] && grep -q 'error\[ReportInvalid\].*shard 3 of 4 is missing' <<<"$out"; } ||
  fail "missing shard: exit $rc: $out"
out=$(run report merge "$tmp/m.json" --out "$tmp/x.json" 2>&1)
rc=$?
{ [ "$rc" = 2 ] && grep -q 'error\[ReportInvalid\].*foreign' <<<"$out"; } || fail "manifest as report: $out"

# GoogleTest's variables: shard 1 of 2, the status file touched.
GTEST_TOTAL_SHARDS=2 GTEST_SHARD_INDEX=1 GTEST_SHARD_STATUS_FILE="$tmp/status" \
  run check --compiler clang --report "$tmp/g.json" >/dev/null 2>&1
[ -e "$tmp/status" ] || fail "GTEST_SHARD_STATUS_FILE not touched"
python3 -c 'import json,sys; d=json.load(open(sys.argv[1])); sys.exit(0 if d["shard"]=={"index":1,"total":2} and d["jobs"]==[1,3,5,7] else 1)' \
  "$tmp/g.json" || fail "GTEST sharding: not shard 1/2 with kernels 1 3 5 7"

# Killed mid-way: the report says partial, and merge refuses it.
"$qgpu" --root "$tmp/root" check --report "$tmp/k.json" --jobs 1 >/dev/null 2>&1 &  # not `run`: $! must be qgpu
pid=$!
# Killed once its partial report holds a case (rewritten at most once a second as cases finish).
has_case() { python3 -c 'import json,sys; sys.exit(0 if json.load(open(sys.argv[1]))["cases"] else 1)' "$1" 2>/dev/null; }
for _ in $(seq 200); do [ -e "$tmp/k.json" ] && has_case "$tmp/k.json" && break; sleep 0.05; done
{ kill -KILL "$pid"; wait "$pid"; } 2>/dev/null
python3 -c 'import json,sys; d=json.load(open(sys.argv[1])); sys.exit(0 if d["partial"] is True and 0 < len(d["cases"]) < 32 else 1)' \
  "$tmp/k.json" || fail "a killed run's report is not partial with some of its 32 cases"
out=$(run report merge "$tmp/k.json" --out "$tmp/x.json" 2>&1)
rc=$?
{ [ "$rc" = 2 ] && grep -q 'ReportInvalid.*partial' <<<"$out"; } || fail "partial report merged: $out"
ls -a "$tmp" | grep -q '\.tmp\.' && fail "a temporary file was left behind"

# A recorded run, audited untouched and as tampered copies (docs/reports.md "qgpu audit").
run check --compiler clang --no-gpu -k saxpy -k gcd -k warp_vote --out "$tmp/rec" \
    >"$tmp/rec.out" 2>"$tmp/rec.err" || fail "check --out exit $? ($(cat "$tmp/rec.err"))"
grep -q $'\r' "$tmp/rec.err" && fail "a progress bar on a stderr that is not a terminal"
ls "$tmp/rec/traces" | grep -q '^saxpy.clang.interp.trace.json$' || fail "no trace record of saxpy"
out=$(run audit "$tmp/rec" 2>&1)
rc=$?
{ [ "$rc" = 0 ] && grep -q '3 traces confirmed 1:1, 0 differ' <<<"$out" &&
  grep -q 'catalog inputs compared' <<<"$out"; } || fail "untouched audit (exit $rc): $out"
tamper() {  # tamper NAME PYTHON: a copy of the recorded run, edited by PYTHON (d: its directory)
  rm -rf "$tmp/$1"; cp -r "$tmp/rec" "$tmp/$1"
  python3 -c "import json, sys; d = sys.argv[1]
def load(p): return json.load(open(f'{d}/{p}'))
def store(p, j): json.dump(j, open(f'{d}/{p}', 'w'))
$2" "$tmp/$1" || fail "tampering $1"
}
tamper tok 'r = load("traces/gcd.clang.interp.trace.json"); i = r["promptTokens"] + 3
r["tokens"][i] = (r["tokens"][i] + 1) if r["tokens"][i] < 200 else r["tokens"][i] - 1
store("traces/gcd.clang.interp.trace.json", r)'
out=$(run audit "$tmp/tok" 2>&1)
rc=$?
{ [ "$rc" = 1 ] && grep -q 'mismatch  gcd \[clang, interp\]: the re-derived trace differs at token' <<<"$out" &&
  grep -q '(run token 3)' <<<"$out" && grep -q 'step 0 (CTA 0' <<<"$out"; } ||
  fail "tampered token not caught (exit $rc): $out"
tamper dig 'm = load("manifest.json"); m["cases"][0]["traceDigest"] = "fnv1a64:0000000000000000"
store("manifest.json", m)'
out=$(run audit "$tmp/dig" 2>&1)
rc=$?
{ [ "$rc" = 1 ] && grep -q 'traceDigest: the manifest says fnv1a64:0000000000000000' <<<"$out"; } ||
  fail "tampered manifest digest not caught (exit $rc): $out"
# A parameter value of saxpy edited in its record: the input digest and the catalog check tell.
tamper inp 'r = load("traces/saxpy.clang.interp.trace.json"); r["params"][-1] ^= 1
store("traces/saxpy.clang.interp.trace.json", r)'
out=$(run audit "$tmp/inp" 2>&1)
rc=$?
{ [ "$rc" = 1 ] && grep -q 'input: the parameter values differ from catalog kernel saxpy' <<<"$out"; } ||
  fail "tampered input not caught (exit $rc): $out"
tamper ver 'r = load("traces/saxpy.clang.interp.trace.json"); r["traceVersion"] -= 1
store("traces/saxpy.clang.interp.trace.json", r)'
out=$(run audit "$tmp/ver" 2>&1)
rc=$?
{ [ "$rc" = 2 ] && grep -q 'TraceInvalid.*recorded in trace version' <<<"$out"; } ||
  fail "older trace version not refused (exit $rc): $out"

# `run --json` prints a version-2 run report (plus its arrays), which the report readers accept.
run --json run saxpy >"$tmp/run.json" 2>/dev/null || fail "run --json saxpy exit $?"
python3 -c 'import json,sys; d=json.load(open(sys.argv[1])); sys.exit(0 if d["magic"]=="qgpu-check-report" and d["version"]==2 and d["plan"]["kernels"]==["saxpy"] and "arrays" in d and d["cases"][0]["programDigest"].startswith("fnv1a64:") else 1)' \
  "$tmp/run.json" || fail "run --json is not a version-2 run report"
run report merge "$tmp/run.json" --out "$tmp/run-merged.json" >/dev/null 2>&1 ||
  fail "report merge refuses run --json's report (exit $?)"

if [ "$failed" != 0 ]; then echo "$failed failed"; exit 1; fi
echo "report_cli_test: all passed"
