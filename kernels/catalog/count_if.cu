// qgpu-kernel: count_if
// summary: counts the values in [lo, hi) with atomicAdd of a 0/1 predicate
// launch: grid=1 block=16
// param: in in i32[16] = 1 5 9 10 -4 7 3 12 8 8 0 15 6 -1 11 4
// param: count out i32[1]
// param: lo scalar i32 = 3
// param: hi scalar i32 = 10
// expect: count = 8
// tags: atomics reduction

__global__ void count_if(const int* in, int* count, int lo, int hi) {
  int v = in[threadIdx.x];
  atomicAdd(count, (v >= lo && v < hi) ? 1 : 0);
}
