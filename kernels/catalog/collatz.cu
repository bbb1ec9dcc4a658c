// qgpu-kernel: collatz
// summary: Collatz steps to reach 1: per-lane trip counts from 0 to 20
// launch: grid=1 block=8
// param: in in i32[8] = 1 2 3 6 7 9 12 19
// param: steps out i32[8]
// expect: steps = 0 1 7 8 16 19 9 20
// tags: loops divergence

__global__ void collatz(const int* in, int* steps) {
  int v = in[threadIdx.x];
  int n = 0;
  while (v != 1) {
    v = (v & 1) ? 3 * v + 1 : v / 2;
    ++n;
  }
  steps[threadIdx.x] = n;
}
