// qgpu-kernel: dot_atomic
// summary: dot product with one atomicAdd per thread (the seed articles' demo: 32)
// launch: grid=1 block=4
// param: a in i32[4] = 1 2 3 0
// param: b in i32[4] = 4 5 6 0
// param: out out i32[1]
// param: n scalar i32 = 3
// expect: out = 32
// tags: dot atomics demo

__global__ void dot_atomic(const int* a, const int* b, int* out, int n) {
  int i = threadIdx.x;
  if (i < n) atomicAdd(out, a[i] * b[i]);
}
