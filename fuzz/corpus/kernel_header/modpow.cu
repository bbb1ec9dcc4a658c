// qgpu-kernel: modpow
// summary: modular exponentiation by squaring (unsigned, moduli below 2^16 so products fit)
// launch: grid=1 block=8
// param: base in u32[8] = 2 3 7 5 12345 2 10 65000
// param: exp in u32[8] = 10 200 0 3 6789 31 5 2
// param: mod in u32[8] = 1000 65521 13 13 65535 65521 7 65521
// param: out out u32[8]
// expect: out = 24 24580 1 8 52110 32873 5 9357
// tags: loops divergence division

__global__ void modpow(const unsigned* base, const unsigned* exp, const unsigned* mod,
                       unsigned* out) {
  unsigned t = threadIdx.x;
  unsigned m = mod[t];
  unsigned b = base[t] % m;
  unsigned e = exp[t];
  unsigned r = 1 % m;
  while (e != 0) {
    if (e & 1) r = r * b % m;
    b = b * b % m;
    e >>= 1;
  }
  out[t] = r;
}
