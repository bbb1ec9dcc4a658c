// qgpu-kernel: int64_ops
// summary: long long arithmetic per thread: a variable rotate, signed and unsigned 64-bit compares, min/max, negation, the 128-bit product's high half, an arithmetic shift by a variable amount
// launch: grid=1 block=4
// param: a in u32[8] = 0x89abcdef 0x01234567 0x00000000 0x80000000 0xffffffff 0xffffffff 0x00000001 0x00000001
// param: b in u32[8] = 0x00000010 0x00000000 0xffffffff 0x7fffffff 0x00000000 0x00000001 0x00000001 0x00000001
// param: s in u32[4] = 4 63 32 33
// param: out out u32[56]
// expect: out = 2596069104 305419896 0 0 0 0 2309737983 19088743 1985229329 4275878552 0 0 2023406814 1193046 0 1073741824 1 0 0 0 0 0 0 2147483648 4294967295 1073741823 4294967295 4294967295 4294967295 4294967295 1 0 0 0 4294967294 4294967295 1 0 4294967295 0 4294967295 4294967295 2 2 0 0 0 0 2 2 4294967295 4294967294 1 0 0 0
// tags: int64 cuda-idioms

// Each 64-bit value is two words, low first (a[2t], a[2t+1]). Seven results per thread t, each
// two words at out[2 * (7t + k)]: the shifts are by a per-thread amount, the kind of code that
// 64-bit hashing and bit-stream kernels contain. (64 - n) & 63 keeps the rotate defined for n = 0.
__global__ void int64_ops(const unsigned* a, const unsigned* b, const unsigned* s, unsigned* out) {
  unsigned t = threadIdx.x;
  unsigned long long x = a[2 * t] | (unsigned long long)a[2 * t + 1] << 32;
  unsigned long long y = b[2 * t] | (unsigned long long)b[2 * t + 1] << 32;
  unsigned n = s[t] & 63;
  long long sx = (long long)x, sy = (long long)y;
  unsigned long long r[7];
  r[0] = (x << n) | (x >> ((64 - n) & 63));
  r[1] = sx < sy ? 1 : 0;
  r[2] = x < y ? 1 : 0;
  r[3] = (unsigned long long)(sx < sy ? sx : sy) + (x > y ? x : y);
  r[4] = (unsigned long long)(-sx);
  r[5] = (unsigned long long)(((unsigned __int128)x * y) >> 64);
  r[6] = (unsigned long long)(sx >> n);
  for (int k = 0; k < 7; ++k) {
    out[2 * (7 * t + k)] = (unsigned)r[k];
    out[2 * (7 * t + k) + 1] = (unsigned)(r[k] >> 32);
  }
}
