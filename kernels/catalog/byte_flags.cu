// qgpu-kernel: byte_flags
// summary: one byte flag per element (in[i] > 0), written by threads of different warps and CTAs into the same words
// launch: grid=2 block=8
// param: in in i32[16] = 5 -1 0 7 -3 2 2 -8 0 0 1 -1 9 -9 4 0
// param: flags out u32[4]
// param: n scalar u32 = 16
// expect: flags = 16777217 65792 65536 65537
// tags: subword bytes cuda-idioms

// Four threads write the four bytes of each word (st.global.u8): on a GPU byte stores never
// disturb each other, and the machine's lane-serial st.b8 keeps that (docs/machine.md §4).
__global__ void byte_flags(const int* in, unsigned char* flags, unsigned n) {
  unsigned i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) flags[i] = in[i] > 0 ? 1 : 0;
}
