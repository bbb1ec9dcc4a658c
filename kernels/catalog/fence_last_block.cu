// qgpu-kernel: fence_last_block
// summary: last-block-done reduction: block tree sums, __threadfence, atomicInc ticket that wraps to 0, a __shared__ bool, then the last block reduces the partials in parallel
// launch: grid=4 block=4
// param: in in i32[16] = 3 1 4 1 5 9 2 6 5 3 5 8 9 7 9 3
// param: partial out i32[4]
// param: counter out u32[1]
// param: result out i32[1]
// expect: partial = 9 22 21 28
// expect: counter = 0
// expect: result = 80
// tags: reduction multiblock atomics fences shared bool cuda-idioms

// The fence orders each block's partial before its ticket on a GPU (a no-op on this sequentially
// consistent machine). atomicInc(counter, gridDim.x - 1) hands out 0 .. gridDim.x - 1 and wraps
// the counter back to 0, ready for the next launch. The block that draws the last ticket reads
// every partial through a volatile pointer and reduces them with the same tree.
__global__ void fence_last_block(const int* in, int* partial, unsigned* counter, int* result) {
  __shared__ int s[4];
  __shared__ bool isLast;
  unsigned t = threadIdx.x;
  s[t] = in[blockIdx.x * blockDim.x + t];
  __syncthreads();
  for (unsigned d = blockDim.x / 2; d > 0; d >>= 1) {
    if (t < d) s[t] += s[t + d];
    __syncthreads();
  }
  if (t == 0) {
    partial[blockIdx.x] = s[0];
    __threadfence();
    unsigned ticket = atomicInc(counter, gridDim.x - 1);
    isLast = ticket == gridDim.x - 1;
  }
  __syncthreads();
  if (isLast) {
    s[t] = t < gridDim.x ? ((volatile int*)partial)[t] : 0;
    __syncthreads();
    for (unsigned d = blockDim.x / 2; d > 0; d >>= 1) {
      if (t < d) s[t] += s[t + d];
      __syncthreads();
    }
    if (t == 0) result[0] = s[0];
  }
}
