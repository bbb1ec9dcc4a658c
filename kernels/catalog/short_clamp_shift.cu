// qgpu-kernel: short_clamp_shift
// summary: clamp to [lo, hi] given as short parameters, then an arithmetic shift by an unsigned char parameter (ld.param.s16/u8)
// launch: grid=1 block=8
// param: in in i32[8] = -40000 -300 -1 0 7 299 300 123456
// param: out out i32[8]
// param: lo scalar i32 = -300
// param: hi scalar i32 = 32767
// param: shift scalar u32 = 2
// expect: out = -75 -75 -1 0 1 74 75 8191
// tags: select scalar-params subword cuda-idioms

__global__ void short_clamp_shift(const int* in, int* out, short lo, short hi, unsigned char shift) {
  int i = threadIdx.x;
  out[i] = min(max(in[i], (int)lo), (int)hi) >> shift;
}
