// qgpu-kernel: builtins64
// summary: FAILING TWIN (clz of 2^32 expected as 32, it is 31): the dialect header's 64-bit siblings of the 32-bit builtins (__popcll, __clzll, __ffsll, __brevll, llmin, llmax, ullmin, ullmax, llabs) on hand-picked values: 2^32, -16, 0 and LLONG_MIN against -1, 5, LLONG_MIN and 1
// launch: grid=1 block=4
// param: a in u32[8] = 0 1 4294967280 4294967295 0 0 0 2147483648
// param: b in u32[8] = 4294967295 4294967295 5 0 0 2147483648 1 0
// param: out out u32[72]
// expect: out = 1 0 32 0 33 0 2147483648 0 4294967295 4294967295 0 1 0 1 4294967295 4294967295 1 1 60 0 0 0 5 0 4294967295 268435455 4294967280 4294967295 5 0 5 0 4294967280 4294967295 15 0 0 0 64 0 0 0 0 0 0 2147483648 0 0 0 0 0 2147483648 1 0 1 0 0 0 64 0 1 0 0 2147483648 1 0 1 0 0 2147483648 4294967295 2147483647
// tags: int64 cuda-idioms

// Thread t: x = a[t], y = b[t] (two words each, low first); nine results, two words each, at
// out[18t ..]: popc, clz, ffs, brev of x; llmin, llmax, ullmin, ullmax of (x, y); llabs(x | 1)
// (| 1 keeps llabs away from LLONG_MIN, whose absolute value is undefined in C++). Worked by hand:
//   t0 x = 2^32, y = -1:        1, 31, 33, 2^31 | -1, 2^32, 2^32, 2^64-1 | 2^32+1
//   t1 x = -16, y = 5:          60, 0, 5, 0x0FFFFFFFFFFFFFFF | -16, 5, 5, 2^64-16 | 15
//   t2 x = 0, y = LLONG_MIN:    0, 64, 0, 0 | LLONG_MIN, 0, 0, 2^63 | 1
//   t3 x = LLONG_MIN, y = 1:    1, 0, 64, 1 | LLONG_MIN, 1, 1, 2^63 | 2^63-1
__global__ void builtins64(const unsigned* a, const unsigned* b, unsigned* out) {
  unsigned t = threadIdx.x;
  long long x = (long long)(a[2 * t] | (unsigned long long)a[2 * t + 1] << 32);
  long long y = (long long)(b[2 * t] | (unsigned long long)b[2 * t + 1] << 32);
  unsigned long long r[9];
  r[0] = (unsigned long long)__popcll((unsigned long long)x);
  r[1] = (unsigned long long)__clzll(x);
  r[2] = (unsigned long long)__ffsll(x);
  r[3] = __brevll((unsigned long long)x);
  r[4] = (unsigned long long)llmin(x, y);
  r[5] = (unsigned long long)llmax(x, y);
  r[6] = ullmin((unsigned long long)x, (unsigned long long)y);
  r[7] = ullmax((unsigned long long)x, (unsigned long long)y);
  r[8] = (unsigned long long)llabs(x | 1);
  for (int k = 0; k < 9; ++k) {
    out[18 * t + 2 * k] = (unsigned)r[k];
    out[18 * t + 2 * k + 1] = (unsigned)(r[k] >> 32);
  }
}
