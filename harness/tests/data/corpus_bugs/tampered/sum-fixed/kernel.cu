// qgpu-kernel: kernel
// summary: the corpus runner's self-test fixture (not a bug): out[t] = in[t] * 3 + t
// launch: grid=1 block=4
// param: in in u32[4] = 1 2 3 4
// param: out out u32[4]
// expect: out = 3 7 12 15
// note: qgpu-bug: sum-fixed
// note: wrong: nothing (a fixture of harness/tests/corpus_bugs_cli_test.sh; expect worked out by hand)
// note: found-by: hand-written
// note: status: fixed 0000000
// note: compilers: clang nvcc

__global__ void kernel(const unsigned* in, unsigned* out) {
  unsigned t = threadIdx.x;
  out[t] = in[t] * 3u + t;
}
