// Bit manipulation: rotate (shf.l.wrap), bit fields, popc, negative and hex constants.
__global__ void bits(const unsigned* in, unsigned* out) {
  unsigned v = in[threadIdx.x];
  unsigned r = (v << 5) | (v >> 27);
  unsigned f = (v >> 3) & 0x1f;
  int sx = (int)(v << 20) >> 28;
  out[threadIdx.x] = r ^ f ^ (unsigned)sx ^ (unsigned)__popc(v) ^ (v & 0xfffffffcu);
}
