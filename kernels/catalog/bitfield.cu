// qgpu-kernel: bitfield
// summary: bit-field extract (unsigned and sign-extending) and insert at constant positions
// launch: grid=1 block=6
// param: x in u32[6] = 0x12345678 0xfffff80f 0 0xffffffff 0x00000ff0 0x80000800
// param: field out u32[6]
// param: sfield out i32[6]
// param: inserted out u32[6]
// expect: field = 103 128 0 255 255 128
// expect: sfield = 103 -128 0 -1 -1 -128
// expect: inserted = 305418360 4294963471 512 4294964223 1264 2147484928
// tags: bits

__global__ void bitfield(const unsigned* x, unsigned* field, int* sfield, unsigned* inserted) {
  unsigned t = threadIdx.x;
  unsigned v = x[t];
  field[t] = (v >> 4) & 0xffu;           // bits 4..11
  sfield[t] = ((int)(v << 20)) >> 24;    // bits 4..11, sign-extended
  inserted[t] = (v & ~(0xfu << 8)) | ((t & 0xfu) << 8);  // thread id into bits 8..11
}
