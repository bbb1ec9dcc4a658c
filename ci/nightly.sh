#!/usr/bin/env bash
# The nightly conformance run under one command: builds qgpu, runs the full catalog on every leg
# this machine has (both compilers; the interpreter; the GPU when there is one, else its cases
# are inconclusive with the reason), writes every report (docs/reports.md), runs the fuzzers for
# their nightly budget and the benchmarks with their regression gate against bench/baseline.json.
# Everything lands in $QGPU_NIGHTLY_OUT (default build/nightly/): run.json, run.xml, run.html,
# run.txt, manifest-run.json, traces-run/ (audit with `qgpu audit manifest-run.json`), bench.json,
# bench-report.txt, bench.html, fuzz.log.
#
# Sharded (a CI matrix, a Kubernetes indexed job, a Slurm array): set QGPU_SHARD=i/n (0-based), or
# GTEST_TOTAL_SHARDS/GTEST_SHARD_INDEX; each shard writes shard-<i>.json (+ .xml, .html, .txt,
# manifest-shard-<i>.json)
# and skips the fuzzers and benchmarks unless QGPU_NIGHTLY_ALL_SHARDS=1 (shard 0 runs them).
# QGPU_BALANCE=REPORT balances the shards by a previous run report's times. Merge the shards with
#   build/harness/qgpu report merge shard-*.json --out run.json --junit run.xml --html run.html
#
# Shard 0 also runs the tests labelled `nightly` (nightly-tests.log) and the circuit's torch tests
# with QGPU_CIRCUIT_FULL=1 (circuit-full.log).
# Knobs: QGPU_FUZZ_SECONDS (default 600 per fuzzer; 0 skips fuzzing), QGPU_CAMPAIGN_SECONDS
# (default 1200 per random generator; 0 skips them), QGPU_NIGHTLY_BENCH=0 skips the benchmarks. Exit code: the conformance run's (common/outcome.h: 0 ok, 1 mismatch, 3 harness
# error, 4 inconclusive only), else 5 when a fuzzer, a random-program campaign, the full circuit
# tests or the benchmarks failed or a benchmark regressed (the gate).
set -uo pipefail
cd "$(dirname "$0")/.."
out="${QGPU_NIGHTLY_OUT:-build/nightly}"
mkdir -p "$out"
shard="${QGPU_SHARD:-}"
if [ -z "$shard" ] && [ -n "${GTEST_TOTAL_SHARDS:-}" ]; then
  shard="${GTEST_SHARD_INDEX:-}/${GTEST_TOTAL_SHARDS}"
fi
# qgpu reads --shard; the variables must not also shard it a second way.
unset GTEST_TOTAL_SHARDS GTEST_SHARD_INDEX

bench=ON
[ "${QGPU_NIGHTLY_BENCH:-1}" = 0 ] && bench=OFF
bash ci/build.sh -DQGPU_BENCH="$bench" || exit 3

args=(check --verbose)
name=run
first_shard=1
if [ -n "$shard" ]; then
  args+=(--shard "$shard")
  name="shard-${shard%%/*}"
  [ "${shard%%/*}" = 0 ] || first_shard=0
fi
[ -n "${QGPU_BALANCE:-}" ] && args+=(--balance "$QGPU_BALANCE")
args+=(--report "$out/$name.json" --junit "$out/$name.xml" --html "$out/$name.html"
       --manifest "$out/manifest-$name.json"   # not $name*: merge globs shard-*.json
       --traces "$out/traces-$name")           # for `qgpu audit $out/manifest-$name.json`
start=$(date +%s)
./build/harness/qgpu "${args[@]}" | tee "$out/$name.txt"
code=${PIPESTATUS[0]}
echo "conformance: exit $code in $(( $(date +%s) - start )) s; reports in $out/$name.*"

extras_failed=0
if [ "$first_shard" = 1 ] || [ "${QGPU_NIGHTLY_ALL_SHARDS:-0}" = 1 ]; then
  seconds="${QGPU_FUZZ_SECONDS:-600}"
  if [ "$seconds" != 0 ]; then
    QGPU_FUZZ_SECONDS="$seconds" bash ci/fuzz.sh >"$out/fuzz.log" 2>&1 || extras_failed=1
    echo "fuzzers: $([ $extras_failed = 0 ] && echo ok || echo FAILED) ($out/fuzz.log)"
  fi
  # The random-program campaigns (issue 9): each generator of gen/ for QGPU_CAMPAIGN_SECONDS
  # (default 1200: an hour for the three), from a seed that changes every night so that the
  # nights do not repeat each other; every failing case is written with its seed and policy
  # under $out/campaigns/<gen>/ (replay: the line `qgpu fuzz` prints, or `qgpu reduce`).
  campaign="${QGPU_CAMPAIGN_SECONDS:-1200}"
  if [ "$campaign" != 0 ]; then
    seed=$(( $(date +%s) / 86400 * 100000 ))
    for gen in program ptx cuda; do
      ./build/harness/qgpu fuzz --gen "$gen" --seconds "$campaign" --seed "$seed" \
        --out "$out/campaigns/$gen" >"$out/campaign-$gen.log" 2>&1
      rc=$?
      echo "campaign $gen: exit $rc ($(grep -m 1 "^fuzz " "$out/campaign-$gen.log" | cut -c1-160))"
      # 0 all held, 4 nothing comparable (e.g. no compiler): not a finding; 1 or 3 is.
      case "$rc" in 0|4) ;; *) extras_failed=1 ;; esac
    done
  fi
  # The tests too slow for every commit (label `nightly`, README "Tests"; ci/test.sh skips them).
  ctest --test-dir build -L nightly --output-on-failure >"$out/nightly-tests.log" 2>&1 ||
    extras_failed=1
  echo "nightly-only tests: $(tail -n 1 "$out/nightly-tests.log") ($out/nightly-tests.log)"
  # The circuit's torch tests with their full inputs (docs/circuit.md §9's measurements; per
  # commit they run reduced ones): QGPU_CIRCUIT_FULL=1, circuit/tests/harness.h.
  QGPU_CIRCUIT_FULL=1 ctest --test-dir build -L torch -R '^circuit_' --output-on-failure \
    >"$out/circuit-full.log" 2>&1 || extras_failed=1
  # The catalog through the model leg in fp32 and bf16 (ci/model-leg.sh; QGPU_MODEL_LEG=0 skips
  # it: hours on a 2-core CPU, ci/model-leg.sh).
  if [ "${QGPU_MODEL_LEG:-1}" != 0 ] && [ -x build/harness/qgpu ]; then
    bash ci/model-leg.sh "$out/model-leg" >"$out/model-leg.log" 2>&1 || extras_failed=1
    echo "model leg: $(tail -n 1 "$out/model-leg.log") ($out/model-leg.log)"
    # A few kernels through the `2b` checkpoint (ci/model-leg-2b.sh: 13 GB of disk while it runs).
    bash ci/model-leg-2b.sh "$out/model-leg-2b" >"$out/model-leg-2b.log" 2>&1 || extras_failed=1
    echo "model leg, 2b: $(tail -n 1 "$out/model-leg-2b.log") ($out/model-leg-2b.log)"
  fi
  if [ "$bench" = ON ] && [ -x build/bench/qgpu_bench ]; then
    build/bench/qgpu_bench --benchmark_repetitions=5 --benchmark_out="$out/bench.json" \
      --benchmark_out_format=json >"$out/bench.txt" 2>&1 || extras_failed=1
    echo "benchmarks: $out/bench.json"
    # The gate (docs/reports.md "Benchmark reports"): exit 5 is a regression beyond the
    # threshold and the noise; 4 (nothing comparable with the baseline) is printed, not failed.
    if [ -f bench/baseline.json ]; then
      run_report=()
      [ -f "$out/$name.json" ] && run_report=(--run-report "$out/$name.json")
      ./build/harness/qgpu bench report "$out/bench.json" --baseline bench/baseline.json \
        --thresholds bench/thresholds.json --html "$out/bench.html" "${run_report[@]}" \
        | tee "$out/bench-report.txt"
      gate=${PIPESTATUS[0]}
      echo "benchmark gate: exit $gate ($out/bench-report.txt, $out/bench.html)"
      case "$gate" in 0|4) ;; *) extras_failed=1 ;; esac
    fi
  fi
  # The model leg's speed (bench/leg_bench.cpp: circuit build, load, tokens/s in fp32 and bf16).
  if [ "$bench" = ON ] && [ -x build/harness/qgpu_leg_bench ]; then
    build/harness/qgpu_leg_bench --benchmark_out="$out/leg-bench.json" --benchmark_out_format=json \
      >"$out/leg-bench.txt" 2>&1 || extras_failed=1
    echo "leg benchmarks: $out/leg-bench.json"
  fi
fi
if [ "$code" = 0 ] && [ "$extras_failed" = 1 ]; then exit 5; fi
exit "$code"
