// qgpu-kernel: uchar_histogram
// summary: histogram of unsigned char data (bytes >= 0x80 included) into 8 bins with shared atomics, then per-CTA bytes of the bin counts
// launch: grid=2 block=8
// param: data in u32[8] = 0x03020100 0x07060504 0xfffefdfc 0x80818283 0x11223344 0x08101820 0x0f0f0f0f 0x00000000
// param: hist out i32[8]
// param: small out u32[4]
// param: n scalar u32 = 32
// expect: hist = 10 3 3 3 3 2 2 6
// expect: small = 33686018 33686018 16843016 67108865
// tags: subword bytes histogram atomics shared cuda-idioms

// Each CTA counts its half of the bytes in shared memory and adds its bins to the global
// histogram; it also writes its bin counts as bytes (small[8 * cta + b]), so two CTAs write the
// two halves of each word.
__global__ void uchar_histogram(const unsigned char* data, int* hist, unsigned char* small, unsigned n) {
  __shared__ int bins[8];
  unsigned t = threadIdx.x;
  bins[t] = 0;
  __syncthreads();
  unsigned half = n / gridDim.x;
  for (unsigned i = blockIdx.x * half + t; i < (blockIdx.x + 1) * half; i += blockDim.x)
    atomicAdd(&bins[data[i] & 7], 1);
  __syncthreads();
  atomicAdd(&hist[t], bins[t]);
  small[blockIdx.x * 8 + t] = (unsigned char)bins[t];
}
