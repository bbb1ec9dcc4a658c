#!/usr/bin/env bash
# End to end (label tools: clang-14 and Debian's chromium): the HTML report as a browser renders
# it (issue 10 item 3). A run of three catalog kernels (vadd's expectation tampered with, so a
# mismatch shows) is written as an HTML page with a benchmark section (`qgpu bench report
# --run-report`), opened in headless Chromium, and its rendered DOM must show the counts of the
# JSON report in every summary cell (data-leg/data-compiler/data-verdict) and total
# (data-total), the benchmark rows with their verdicts and the plots; the screenshot is saved
# next to the test's build output (html_render.png). Without chromium it skips (exit 77) and
# says so.
# Usage: html_render_test.sh PATH/TO/qgpu SCREENSHOT_DIR
set -u
qgpu="$1"
shots="$2"
src="$(cd "$(dirname "$0")/../.." && pwd)"
browser=$(command -v chromium || command -v chromium-browser || true)
if [ -z "$browser" ]; then
  echo "SKIP: chromium is not installed (ci/install-deps.sh installs Debian's chromium)"
  exit 77
fi
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
failed=0
fail() { echo "FAIL $*"; failed=$((failed + 1)); }

mkdir -p "$tmp/root/kernels/catalog"
for k in vadd saxpy gcd; do cp "$src/kernels/catalog/$k.cu" "$tmp/root/kernels/catalog/"; done
sed -i 's|^// expect: out = 11 -18|// expect: out = 12 -18|' "$tmp/root/kernels/catalog/vadd.cu"
"$qgpu" --root "$tmp/root" check --compiler clang --no-gpu --report "$tmp/r.json" >/dev/null 2>&1
[ -s "$tmp/r.json" ] || fail "no run report"
bench() {  # bench FILE T1 T2 ...: Google Benchmark JSON of BM_A (ns)
  local file="$1" entries="" sep=""; shift
  for t in "$@"; do
    entries+="$sep{\"name\": \"BM_A\", \"run_name\": \"BM_A\", \"run_type\": \"iteration\", \"real_time\": $t}"
    sep=", "
  done
  echo "{\"benchmarks\": [$entries]}" >"$file"
}
bench "$tmp/base.json" 100 101 99 98 102
bench "$tmp/slow.json" 130 131 129 133 132
"$qgpu" bench report "$tmp/slow.json" --baseline "$tmp/base.json" --html "$tmp/page.html" \
  --run-report "$tmp/r.json" >/dev/null 2>&1
[ $? = 5 ] || fail "bench report of a regression did not exit 5"

chrome() { timeout 120 "$browser" --headless --no-sandbox --disable-gpu --no-first-run \
  --user-data-dir="$tmp/profile" "$@" "file://$tmp/page.html" 2>/dev/null; }
chrome --dump-dom >"$tmp/dom.html" || fail "chromium could not render the page"
python3 - "$tmp" <<'PY' || fail "rendered counts (above)"
import json, sys
from html.parser import HTMLParser
tmp = sys.argv[1]
report = json.load(open(f"{tmp}/r.json"))
class Cells(HTMLParser):
    def __init__(self):
        super().__init__(); self.cells = {}; self.totals = {}; self.bench = {}; self.svgs = 0
        self.key = None
    def handle_starttag(self, tag, attrs):
        a = dict(attrs)
        if tag == "svg": self.svgs += 1
        if "data-verdict" in a: self.key = ("cell", a["data-leg"], a["data-compiler"], a["data-verdict"])
        elif "data-total" in a: self.key = ("total", a["data-total"])
        elif "data-bench" in a: self.bench[a["data-bench"]] = a["data-change"]
    def handle_data(self, data):
        if self.key and data.strip():
            (self.cells if self.key[0] == "cell" else self.totals)[self.key[1:]] = int(data)
            self.key = None
p = Cells(); p.feed(open(f"{tmp}/dom.html").read())
bad = []
names = {"match": "match", "mismatch": "mismatch", "inconclusive": "inconclusive", "harnessError": "harness-error"}
total = {v: 0 for v in names.values()}
for t in report["tallies"]:
    for k, v in names.items():
        total[v] += t[k]
        got = p.cells.get((t["backend"], t["compiler"], v))
        if got != t[k]: bad.append(f"{t['backend']} {t['compiler']} {v}: page {got}, report {t[k]}")
for v, n in total.items():
    if p.totals.get((v,)) != n: bad.append(f"total {v}: page {p.totals.get((v,))}, report {n}")
if total["mismatch"] != 1: bad.append(f"want the one tampered mismatch, report has {total['mismatch']}")
if p.bench.get("BM_A") != "REGRESSION": bad.append(f"bench row BM_A: {p.bench.get('BM_A')}")
if p.svgs < 4: bad.append(f"{p.svgs} plots rendered, want at least 4")
for b in bad: print("  " + b)
sys.exit(1 if bad else 0)
PY
mkdir -p "$shots"
chrome --screenshot="$shots/html_render.png" --window-size=1280,2400 >/dev/null
head -c 8 "$shots/html_render.png" 2>/dev/null | od -An -c | grep -q 'P   N   G' ||
  fail "no PNG screenshot at $shots/html_render.png"

if [ "$failed" != 0 ]; then echo "$failed failed"; exit 1; fi
echo "html_render_test: all passed (screenshot: $shots/html_render.png)"
