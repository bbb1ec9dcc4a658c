// qgpu-kernel: block_reduce_dyn
// summary: templated tree reduction in dynamic shared memory (extern __shared__, shared=8)
// launch: grid=2 block=8 shared=8
// template: block_reduce_dyn<int, 8>
// param: in in i32[16] = 1 2 3 4 5 6 7 8 -1 -2 -3 -4 10 20 30 40
// param: out out i32[2]
// param: n scalar u32 = 16
// expect: out = 36 90
// tags: reduction shared dynamic-shared template cuda-idioms

#include <cstdint>

// The block size is a template argument, as in the samples' reduce kernels; the launch line's
// shared=8 gives the extern array its 8 words (cudaLaunchKernel's sharedMem = 32 bytes).
template <class T, unsigned BLOCK>
__global__ void __launch_bounds__(BLOCK) block_reduce_dyn(const T* in, T* out, uint n = 0) {
  extern __shared__ T sdata[];
  unsigned t = threadIdx.x;
  unsigned i = blockIdx.x * BLOCK + t;
  sdata[t] = i < n ? in[i] : 0;
  __syncthreads();
  for (unsigned stride = BLOCK / 2; stride > 0; stride >>= 1) {
    if (t < stride) sdata[t] += sdata[t + stride];
    __syncthreads();
  }
  if (t == 0) out[blockIdx.x] = sdata[0];
}
