// qgpu-kernel: spill_pressure
// summary: 16 words live at once per thread, two warps (one partial): spills, no multiply
// launch: grid=1 block=6
// param: a in u32[16] = 2654435769 17 3735928559 5 305419896 99 3405705229 3 195936478 41 2147483647 2147483648 7 4275878552 255 1
// param: out out u32[6]
// expect: out = 1837337356 1837337443 1837337462 1837337381 1837337360 1837337559

// Expected values worked out independently (Python, wrapping uint32): x_i = a_i ^ t for even i,
// a_i + t for odd i; f = t, then f = (f ^ x_i) + x_(15-i) for i = 0..15; out[t] = f, then + x_i
// for even i and ^ x_i for odd i, in order.
__global__ void spill_pressure(const unsigned* a, unsigned* out) {
  unsigned t = threadIdx.x;
  unsigned x0 = a[0] ^ t;
  unsigned x1 = a[1] + t;
  unsigned x2 = a[2] ^ t;
  unsigned x3 = a[3] + t;
  unsigned x4 = a[4] ^ t;
  unsigned x5 = a[5] + t;
  unsigned x6 = a[6] ^ t;
  unsigned x7 = a[7] + t;
  unsigned x8 = a[8] ^ t;
  unsigned x9 = a[9] + t;
  unsigned x10 = a[10] ^ t;
  unsigned x11 = a[11] + t;
  unsigned x12 = a[12] ^ t;
  unsigned x13 = a[13] + t;
  unsigned x14 = a[14] ^ t;
  unsigned x15 = a[15] + t;
  unsigned f = t;
  f = (f ^ x0) + x15;
  f = (f ^ x1) + x14;
  f = (f ^ x2) + x13;
  f = (f ^ x3) + x12;
  f = (f ^ x4) + x11;
  f = (f ^ x5) + x10;
  f = (f ^ x6) + x9;
  f = (f ^ x7) + x8;
  f = (f ^ x8) + x7;
  f = (f ^ x9) + x6;
  f = (f ^ x10) + x5;
  f = (f ^ x11) + x4;
  f = (f ^ x12) + x3;
  f = (f ^ x13) + x2;
  f = (f ^ x14) + x1;
  f = (f ^ x15) + x0;
  unsigned s = f;
  s = s + x0;
  s = s ^ x1;
  s = s + x2;
  s = s ^ x3;
  s = s + x4;
  s = s ^ x5;
  s = s + x6;
  s = s ^ x7;
  s = s + x8;
  s = s ^ x9;
  s = s + x10;
  s = s ^ x11;
  s = s + x12;
  s = s ^ x13;
  s = s + x14;
  s = s ^ x15;
  out[t] = s;
}
