// qgpu-kernel: sqlen
// summary: squared length |v|^2 = v.v (expression mode: `|v|^2`, `sqlen(v)`)
// launch: grid=1 block=4
// param: v in i32[5] = 3 -4 12 1 2
// param: out out i32[1]
// param: n scalar i32 = 5
// expect: out = 174
// tags: normal-mode dot atomics loops

__global__ void sqlen(const int* v, int* out, int n) {
  int sum = 0;
  for (int i = threadIdx.x; i < n; i += blockDim.x) sum += v[i] * v[i];
  atomicAdd(out, sum);
}
