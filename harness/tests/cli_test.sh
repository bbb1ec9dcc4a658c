#!/usr/bin/env bash
# End-to-end tests of the `qgpu` command line: outputs and the exit-code contract of
# common/outcome.h (0 ok, 1 mismatch, 2 usage/bad input, 3 harness error, 4 inconclusive).
# Usage: cli_test.sh PATH/TO/qgpu
set -u
qgpu="$1"
. "$(dirname "$0")/expect.sh"

expect expr-dot 0 '^32$' -- "$qgpu" expr "[1, 2, 3] @ [4, 5, 6]"
# The seeds' demo (47 tokens in qwenGPU): the exact run, pinned as the figure of merit.
# The dot demo's run, derived by hand in docs/trace.md (33 tokens: B0's set.ge and B1's five ops,
# the mul's NOP and regrec two records, trace v6).
expect expr-dot-demo-count 0 '^dot_atomic: 33 generated tokens \(98 prompt tokens\), 2 steps$' -- "$qgpu" expr "[1, 2, 3] @ [4, 5, 6]"
expect expr-dot-demo-trace 0 '^EX\(0\) WM\(w0,0111\) WP\(p0\) T\(0\) EX\(1\) WM\(w0,0111\) WR\(r1\) T\(0\) T\(4\) T\(8\) WR\(r2\) T\(1\) T\(2\) T\(3\) WR\(r1\) T\(4\) T\(5\) T\(6\) NOP WR\(r1\) T\(4\) T\(10\) C\(0\) T\(-14\) MG\(0111\) T\(6\) T\(4\) T\(6\) T\(14\) T\(6\) C\(1\) T\(0\) END$' -- "$qgpu" expr "[1, 2, 3] @ [4, 5, 6]"
expect expr-dot-long 0 '^153$' -- "$qgpu" expr "[1,2,3,4,5,6,7,8,9,10,11,12,13,14,15,16,17] @ [1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1]"
expect expr-dot-trace-ends 0 'END$' -- "$qgpu" expr "[1, 2, 3] @ [4, 5, 6]"
expect expr-nvcc 0 '^32$' -- "$qgpu" expr --compiler nvcc "[1, 2, 3] @ [4, 5, 6]"
expect expr-matmul 0 '^\[\[19, 22\], \[43, 50\]\]$' -- "$qgpu" expr "[[1, 2], [3, 4]] @ [[5, 6], [7, 8]]"
expect expr-nested 0 '^\[8, 14\]$' -- "$qgpu" expr "2 * ([1, 2] + [3, 5])"
expect expr-sqlen 0 '^25$' -- "$qgpu" expr "|[3, -4]|^2"
expect expr-json 0 '"result": "32"' -- "$qgpu" --json expr "[1, 2, 3] @ [4, 5, 6]"
expect expr-shape-error 2 'vector of 2' -- "$qgpu" expr "[1, 2] @ [1, 2, 3]"
expect expr-syntax-error 2 'expected' -- "$qgpu" expr "[1, 2"
# Over the machine's limits: inconclusive (common/outcome.h), exit 4.
expect expr-too-big 4 'OverLimit|126' -- "$qgpu" expr "[1,2,3,4,5,6,7,8,9,10,11,12,13,14,15,16,17,18,19,20,21,22,23,24,25,26,27,28,29,30,31,32,33,34,35,36,37,38,39,40,41,42,43,44,45,46,47,48,49,50,51,52,53,54,55,56,57,58,59,60,61,62,63,64] @ [1,2,3,4,5,6,7,8,9,10,11,12,13,14,15,16,17,18,19,20,21,22,23,24,25,26,27,28,29,30,31,32,33,34,35,36,37,38,39,40,41,42,43,44,45,46,47,48,49,50,51,52,53,54,55,56,57,58,59,60,61,62,63,64]"
expect expr-wrap-text 0 'int32 wrap-around: the exact value is 4294967294' -- "$qgpu" expr "[2147483647] @ [2]"
expect expr-wrap-json 0 '"wrapped": true' -- "$qgpu" --json expr "[2147483647] @ [2]"
expect expr-wrap-json-exact 0 '"exact": "4294967294"' -- "$qgpu" --json expr "[2147483647] @ [2]"
expect expr-no-wrap-json 0 '"wrapped": false' -- "$qgpu" --json expr "[1073741823] @ [2]"
chain1000=$(printf '[1, 2]'; for _ in $(seq 999); do printf ' + [1, 2]'; done)
chain2000=$(printf '[1, 2]'; for _ in $(seq 1999); do printf ' + [1, 2]'; done)
# One compile per kernel, one lowering per parameter list: a cache keyed by the kernel alone would
# reuse vscale's k = 2 for the second scale ([4, 8]) and vadd's n = 2 layout for the 3-vector.
expect expr-cache-scalar-param 0 '^\[5, 10\]$' -- "$qgpu" expr "2 * [1, 2] + 3 * [1, 2]"
expect expr-cache-shape 0 '^\[104, 156, 208\]$' -- "$qgpu" expr "sqlen([1, 2] + [3, 4]) * ([1, 2, 3] + [1, 1, 1])"
expect expr-chain-1000 0 '^\[1000, 2000\]$' -- "$qgpu" expr "$chain1000"
expect expr-chain-2000 2 'error\[Usage\]: column 9224: more than 1024 operations' -- "$qgpu" expr "$chain2000"
expect expr-max-steps-negative 2 'must be an integer from 1 to 100000000' -- "$qgpu" expr --max-steps -1 "[1] @ [2]"
expect run-max-steps-negative 2 'must be an integer from 1 to 100000000' -- "$qgpu" run vadd --max-steps -1
expect run-max-steps-at-max 0 '' -- "$qgpu" run vadd --max-steps 100000000
# --expand-division (docs/lowering.md §7): the circuit target's program, div/rem as loops.
expect run-expand-division 0 '^division expanded: 1 ops into loops \(0 dead ones removed\); 4 -> 6 blocks, 11 -> 28 ops$' -- "$qgpu" run gcd --expand-division
expect run-expand-division-match 0 '^match \[nvcc, interp\]$' -- "$qgpu" run modpow --compiler nvcc --expand-division
expect trace-expand-division 0 'shf.l' -- "$qgpu" trace rotate_array --expand-division
expect compile-expand-division-no-div 1 '' -- bash -c "\"$qgpu\" compile divmod_signed --program --expand-division | grep -E '(div|rem)\\.s'"
expect run-kernel-dev-zero 2 'error\[Io\].*character device' -- "$qgpu" run /dev/zero
expect run-kernel-directory 2 'error\[Io\].*a directory' -- "$qgpu" run "$tmp"
mkfifo "$tmp/fifo.cu"
expect run-kernel-fifo 2 'error\[Io\].*a FIFO' -- "$qgpu" run "$tmp/fifo.cu"
expect trace-tokens-dev-zero 2 'error\[Io\].*character device' -- "$qgpu" trace --tokens /dev/zero

expect run-match 0 '^match \[clang, interp\]' -- "$qgpu" run vadd
expect run-arrays 0 '^out \(out\) = 11 -18 33 -36 55 -54$' -- "$qgpu" run vadd
expect run-gpu-no-device 4 'no device' -- "$qgpu" run vadd --backend gpu
expect run-unknown-kernel 2 "no catalog kernel named 'nope'" -- "$qgpu" run nope
expect run-bad-backend 2 "unknown backend" -- "$qgpu" run vadd --backend tpu
expect run-bad-compiler 2 "unknown compiler" -- "$qgpu" run vadd --compiler gcc

# A kernel file whose expectation is wrong: mismatch, exit 1, names the word.
sed 's/^\/\/ expect: out = 11 /\/\/ expect: out = 12 /' kernels/catalog/vadd.cu >"$tmp/vadd.cu"
expect run-mismatch 1 'mismatch.*out' -- "$qgpu" run "$tmp/vadd.cu"
# Malformed CUDA: the compiler's message with its location, exit 2.
sed 's/out\[i\] = u\[i\] + v\[i\];/out[i] = u[i] + ;/' kernels/catalog/vadd.cu >"$tmp/vadd.cu"
expect run-bad-cuda 2 'vadd.cu:[0-9]+:[0-9]+: error\[CompileFailed\]' -- "$qgpu" run "$tmp/vadd.cu"
# A malformed header: KernelFile error with file and line.
sed 's/^\/\/ launch: grid=1 block=4/\/\/ launch: grid=1 block=99/' kernels/catalog/vadd.cu >"$tmp/vadd.cu"
expect run-bad-header 2 'vadd.cu:[0-9]+: error\[KernelFile\]' -- "$qgpu" run "$tmp/vadd.cu"

expect compile-shows-both 0 'machine program \(clang\)' -- "$qgpu" compile dot
expect compile-ptx 0 '\.visible \.entry' -- "$qgpu" compile dot --ptx --compiler nvcc
"$qgpu" compile dot --ptx --compiler clang 2>/dev/null | sed -n '/^\/\/ ---- PTX/,$p' | tail -n +2 >"$tmp/dot.ptx"
expect compile-ptx-file 0 '^B0:' -- "$qgpu" compile "$tmp/dot.ptx" --param 0 --param 12 --param 24 --param 3
printf '.version 6.4\n.target sm_75\n.address_size 64\n.visible .entry k()\n{\n\tfma.rn.f32 %%f1, %%f2, %%f3, %%f4;\n\tret;\n}\n' >"$tmp/bad.ptx"
# Outside the supported subset: inconclusive, exit 4; malformed PTX: bad input, exit 2.
expect compile-unsupported-ptx 4 'bad.ptx:6:[0-9]+: error\[PtxUnsupported\]' -- "$qgpu" compile "$tmp/bad.ptx"
printf '.version 6.4\n.target sm_75\n.address_size 64\n.visible .entry k()\n{\n\tret\n}\n' >"$tmp/syntax.ptx"
expect compile-bad-ptx 2 'syntax.ptx:[0-9]+:[0-9]+: error\[PtxSyntax\]' -- "$qgpu" compile "$tmp/syntax.ptx"

expect trace-pretty 0 'warp 0' -- "$qgpu" trace dot
"$qgpu" trace dot --ids >"$tmp/dot.ids"
expect trace-from-ids 0 '^end$' -- "$qgpu" trace --tokens "$tmp/dot.ids"
echo "1 2 99999" >"$tmp/bad.ids"
expect trace-bad-ids 2 'bad.ids:1:5: error\[TraceInvalid\]: token 2 ' -- "$qgpu" trace --tokens "$tmp/bad.ids"
# A decode error names the absolute token (prompt included) and its line:column in the file.
tr ' ' '\n' <"$tmp/dot.ids" | head -n -1 >"$tmp/cut.ids"
expect trace-cut-ids 2 'cut.ids: error\[TraceInvalid\]: token [0-9]+ \(end of input\)' -- "$qgpu" trace --tokens "$tmp/cut.ids"
expect trace-json 0 '"pretty": ' -- "$qgpu" --json trace --tokens "$tmp/dot.ids"

expect check-one 0 'interp +clang +1 +0' -- "$qgpu" check --kernel dot --no-gpu
expect check-list 0 '^dot ' -- "$qgpu" check --list
expect check-unknown 2 "no catalog kernel named 'zzz'" -- "$qgpu" check --kernel zzz
expect check-unknown-tag 2 "unknown tag 'zzz'; the catalog's tags: .*atomics" -- "$qgpu" check --tag zzz
expect check-jobs-zero 2 'outside 1\.\.256' -- "$qgpu" check -j 0 --kernel dot --no-gpu
expect check-jobs-negative 2 'outside 1\.\.256' -- "$qgpu" check -j -3 --kernel dot --no-gpu
expect check-list-json 0 '"name": "dot"' -- "$qgpu" --json check --list
# --json: errors are one object on stdout, for a failing command and for a bad command line.
expect json-error 2 '"kind": "PtxSyntax"' -- "$qgpu" --json compile "$tmp/syntax.ptx"
expect json-expr-error 2 '"kind": "Usage"' -- "$qgpu" --json expr "[1, 2"
expect json-usage-error 2 '"kind": "Usage"' -- "$qgpu" --json run vadd --no-such-flag
expect compile-json 0 '"program": ' -- "$qgpu" --json compile dot --compiler clang
# User input echoed in messages is escaped.
expect echo-escaped 2 'zz\\x1b\[2J' -- "$qgpu" run "$(printf 'zz\033[2J')"
expect no-subcommand 2 '' -- "$qgpu"

# The model leg's CLI, where the binary was built with LibTorch.
if "$qgpu" --help | grep -Eq "^ +model "; then
  expect model-info-base 0 'schedule +LFLF' -- "$qgpu" model info model/base
  expect model-generate-base 0 'tokens/s' -- "$qgpu" model generate model/base --prompt "Licensed under the Apache License" -n 8
  expect model-info-missing 2 'Checkpoint|config.json' -- "$qgpu" model info "$tmp/nowhere"
  mkdir -p "$tmp/corrupt" && cp model/base/config.json "$tmp/corrupt/" && head -c 1000 model/base/model.safetensors >"$tmp/corrupt/model.safetensors"
  expect model-info-corrupt 2 'model.safetensors' -- "$qgpu" model generate "$tmp/corrupt" --prompt "x" -n 1
fi

finish cli_test
