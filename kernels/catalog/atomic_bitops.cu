// qgpu-kernel: atomic_bitops
// summary: atomicAnd, atomicOr and atomicXor of 8 words into three accumulators
// launch: grid=1 block=8
// param: in in u32[8] = 0xfffffff0 0x0ff0ffff 0xfffeffff 0x7fffffff 0xffffff0f 0xffffffff 0xefffffff 0xfff7ffff
// param: acc inout u32[3] = 0xffffffff 0 0x0f0f0f0f
// expect: acc = 267452160 4027515135 1862864880
// tags: atomics bits

__global__ void atomic_bitops(const unsigned* in, unsigned* acc) {
  unsigned v = in[threadIdx.x];
  atomicAnd(&acc[0], v);
  atomicOr(&acc[1], ~v);
  atomicXor(&acc[2], v);
}
