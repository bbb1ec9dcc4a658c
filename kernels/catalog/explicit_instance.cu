// qgpu-kernel: explicit_instance
// summary: a template kernel run through the file's own explicit instantiation
// launch: grid=1 block=4
// param: x in u32[4] = 1 2 3 4
// param: y out u32[4]
// param: scale scalar u32 = 3
// expect: y = 10 13 16 19
// tags: vectors template cuda-idioms

// y = x * scale + OFFSET; the instantiation below names T and OFFSET (the kernel file format reads
// the element type through it).
template <typename T, int OFFSET = 1>
__global__ void explicit_instance(const T* __restrict__ x, T* __restrict__ y, T scale) {
  unsigned i = threadIdx.x;
  y[i] = x[i] * scale + OFFSET;
}

template __global__ void explicit_instance<unsigned int, 7>(const unsigned int*, unsigned int*,
                                                           unsigned int);
