// qgpu-kernel: rotate_bits
// summary: left and right rotations by per-thread amounts 1..31 (PTX shf.l.wrap)
// launch: grid=1 block=8
// param: x in u32[8] = 1 0x80000001 0x12345678 0xffff0000 7 0xdeadbeef 0x0000ffff 0x40000000
// param: s in u32[8] = 1 1 4 16 31 8 3 2
// param: rotl out u32[8]
// param: rotr out u32[8]
// expect: rotl = 2 3 591751041 65535 2147483651 2914971614 524280 1
// expect: rotr = 2147483648 3221225472 2166572391 65535 14 4024348094 3758104575 268435456
// tags: bits

__global__ void rotate_bits(const unsigned* x, const unsigned* s, unsigned* rotl, unsigned* rotr) {
  unsigned t = threadIdx.x;
  unsigned v = x[t];
  unsigned k = s[t];
  rotl[t] = (v << k) | (v >> (32 - k));
  rotr[t] = (v >> k) | (v << (32 - k));
}
