// qgpu-kernel: uchar4_histogram
// summary: 16-bin histogram of the high nibbles of bytes read as uchar4 (one 4-byte load per thread), shared atomics then global ones
// launch: grid=2 block=4
// param: data in u32[8] = 0x30201000 0x810ff0ff 0x78563412 0xf0debc9a 0x22221111 0x66554433 0xaa998877 0xeeddccbb
// param: hist out u32[16]
// expect: hist = 2 4 3 3 1 2 1 2 2 2 1 2 1 2 1 3
// tags: subword bytes vector histogram atomics shared cuda-idioms

__global__ void uchar4_histogram(const uchar4* data, unsigned* hist) {
  __shared__ unsigned bins[16];
  for (int b = threadIdx.x; b < 16; b += blockDim.x) bins[b] = 0;
  __syncthreads();
  uchar4 q = data[blockIdx.x * blockDim.x + threadIdx.x];
  atomicAdd(&bins[q.x >> 4], 1u);
  atomicAdd(&bins[q.y >> 4], 1u);
  atomicAdd(&bins[q.z >> 4], 1u);
  atomicAdd(&bins[q.w >> 4], 1u);
  __syncthreads();
  for (int b = threadIdx.x; b < 16; b += blockDim.x)
    if (bins[b] != 0) atomicAdd(&hist[b], bins[b]);
}
