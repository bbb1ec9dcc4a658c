// qgpu-kernel: char_args
// summary: a __noinline__ device function taking signed char, unsigned short and unsigned arguments and returning a long long
// launch: grid=1 block=4
// param: in in i32[4] = -3 200 -129 70000
// param: out out u32[8]
// expect: out = 1900553 4293918720 4084192320 4294967295 142524417 4293918720 3908542720 4294967278
// tags: calls int64 subword cuda-idioms

// The call passes narrowed arguments (the callee reads them with ld.param.s8/.u16 from 32-bit
// slots) and returns 64 bits; (signed char)-129 is 127, (unsigned short)70000 is 4464.
__device__ __noinline__ long long mix(signed char c, unsigned short h, unsigned k) {
  return (long long)c * h - ((long long)k << 20);
}

__global__ void char_args(const int* in, unsigned* out) {
  unsigned t = threadIdx.x;
  int v = in[t];
  long long r = mix((signed char)v, (unsigned short)v, (unsigned)(v + 1));
  out[2 * t] = (unsigned)r;
  out[2 * t + 1] = (unsigned)((unsigned long long)r >> 32);
}
