// qgpu-kernel: compaction
// summary: stream compaction of values above a threshold with an atomic counter, two blocks
// launch: grid=2 block=8
// param: in in i32[16] = 5 12 -3 40 7 8 99 0 15 2 11 10 64 -8 3 21
// param: out out i32[16]
// param: count out i32[1]
// param: threshold scalar i32 = 9
// expect: out = 12 40 99 15 11 10 64 21 0 0 0 0 0 0 0 0
// expect: count = 8
// compare: multiset out
// tags: compaction atomics multiblock divergence

// The slot a value gets depends on the order in which threads reach the atomicAdd, so `out` is
// compared as a multiset; `count` is exact.
__global__ void compaction(const int* in, int* out, int* count, int threshold) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  int v = in[i];
  if (v > threshold) out[atomicAdd(count, 1)] = v;
}
