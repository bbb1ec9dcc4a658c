// qgpu-kernel: byte_perm
// summary: byte permutation (__byte_perm, PTX prmt) with selectors that use bytes of both words
// launch: grid=1 block=6
// param: x in u32[6] = 0x11223344 0x11223344 0x11223344 0xaabbccdd 0x01020304 0xdeadbeef
// param: y in u32[6] = 0x55667788 0x55667788 0x55667788 0x00112233 0x05060708 0xcafef00d
// param: sel in u32[6] = 0x3210 0x0123 0x7654 0x5140 0x1111 0x6420
// param: out out u32[6]
// expect: out = 287454020 1144201745 1432778632 583807965 50529027 4262309359
// note: selector nibbles stay below 8: the sign-replicating mode (nibble bit 3) is left out.
// tags: bits

__global__ void byte_perm(const unsigned* x, const unsigned* y, const unsigned* sel, unsigned* out) {
  unsigned t = threadIdx.x;
  out[t] = __byte_perm(x[t], y[t], sel[t]);
}
