// qgpu-kernel: shared_memory_reduce
// summary: the samples' SharedMemory<T> helper (extern __shared__ behind a conversion operator) in a templated two-loads-per-thread reduction
// launch: grid=2 block=8 shared=8
// template: shared_memory_reduce<unsigned, 8>
// param: in in u32[30] = 1 2 3 4 5 6 7 8 9 10 11 12 13 14 15 16 17 18 19 20 21 22 23 24 25 26 27 28 29 30
// param: out out u32[2]
// param: n scalar u32 = 30
// expect: out = 136 329
// tags: reduction shared dynamic-shared template cuda-idioms

// Dynamic shared memory cannot be declared with a template type (every instantiation would
// redeclare one extern array with another type), so public reductions reach it through this
// helper: one `extern __shared__ int` array, converted to T*.
template <class T>
struct SharedMemory {
  __device__ inline operator T*() {
    extern __shared__ int __smem[];
    return (T*)__smem;
  }
  __device__ inline operator const T*() const {
    extern __shared__ int __smem[];
    return (T*)__smem;
  }
};

// Each thread adds two elements (i and i + blockSize) before the tree, as the samples' reduce3.
template <class T, unsigned blockSize>
__global__ void shared_memory_reduce(const T* in, T* out, unsigned n) {
  T* sdata = SharedMemory<T>();
  unsigned tid = threadIdx.x;
  unsigned i = blockIdx.x * (blockSize * 2) + threadIdx.x;
  T mySum = (i < n) ? in[i] : 0;
  if (i + blockSize < n) mySum += in[i + blockSize];
  sdata[tid] = mySum;
  __syncthreads();
  for (unsigned s = blockDim.x / 2; s > 0; s >>= 1) {
    if (tid < s) sdata[tid] = mySum = mySum + sdata[tid + s];
    __syncthreads();
  }
  if (tid == 0) out[blockIdx.x] = mySum;
}
