// qgpu-kernel: atomic_exch
// summary: atomicExch into a rotated slot: each slot is swapped exactly once
// launch: grid=1 block=8
// param: slots inout i32[8] = 10 11 12 13 14 15 16 17
// param: vals in i32[8] = -1 -2 -3 -4 -5 -6 -7 -8
// param: old out i32[8]
// expect: slots = -8 -1 -2 -3 -4 -5 -6 -7
// expect: old = 11 12 13 14 15 16 17 10
// tags: atomics

__global__ void atomic_exch(int* slots, const int* vals, int* old) {
  int t = threadIdx.x;
  old[t] = atomicExch(&slots[(t + 1) % 8], vals[t]);
}
