// qgpu-kernel: short_affine
// summary: signed 16-bit elements: out[i] = (short)(in[i] * 3 - 100), sign-extending halfword loads and halfword stores of neighbouring threads
// launch: grid=1 block=8
// param: in in u32[4] = 0xfffe0001 0x7fff8000 0x0064ffce 0x12340000
// param: out out u32[4]
// param: neg out i32[8]
// expect: out = 4288085919 2140766108 13172486 909705116
// expect: neg = 1 -1 -1 1 -1 1 1 1
// tags: subword halfwords cuda-idioms

__global__ void short_affine(const short* in, short* out, int* neg) {
  unsigned t = threadIdx.x;
  short v = in[t];
  out[t] = (short)(v * 3 - 100);
  neg[t] = v < 0 ? -1 : 1;  // the load sign-extends
}
