// qgpu-kernel: histogram_shared
// summary: 4-bin histogram with atomicAdd on shared memory, then one store per bin
// launch: grid=1 block=16
// param: data in i32[16] = 0 1 2 3 4 5 6 7 8 9 10 11 3 7 11 15
// param: bins out i32[4]
// expect: bins = 3 3 3 7
// tags: histogram atomics shared barriers

__global__ void histogram_shared(const int* data, int* bins) {
  __shared__ int local[4];
  unsigned t = threadIdx.x;
  if (t < 4) local[t] = 0;
  __syncthreads();
  atomicAdd(&local[data[t] & 3], 1);
  __syncthreads();
  if (t < 4) bins[t] = local[t];
}
