// qgpu-kernel: divmod_unsigned
// summary: unsigned division and remainder by a variable
// launch: grid=1 block=8
// param: a in u32[8] = 17 4294967295 100 0 12345678 7 3000000000 65536
// param: b in u32[8] = 5 16 7 3 1000 9 7 255
// param: q out u32[8]
// param: r out u32[8]
// expect: q = 3 268435455 14 0 12345 0 428571428 257
// expect: r = 2 15 2 0 678 7 4 1
// tags: division

__global__ void divmod_unsigned(const unsigned* a, const unsigned* b, unsigned* q, unsigned* r) {
  unsigned t = threadIdx.x;
  q[t] = a[t] / b[t];
  r[t] = a[t] % b[t];
}
