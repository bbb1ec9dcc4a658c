// qgpu-kernel: char_caesar
// summary: Caesar shift of an unsigned char array with a char shift and a bool flag passed by value (ld.param.s8/u8)
// launch: grid=2 block=8
// param: text in u32[4] = 0x6c6c6568 0x67202c6f 0x77207570 0x646c726f
// param: out out u32[4]
// param: shift scalar i32 = -3
// param: upper scalar u32 = 1
// expect: out = 1229537861 1142959180 1411404365 1095323468
// note: text is "hello, gpu world", one char per byte
// tags: subword bytes char scalar-params cuda-idioms

// Lower-case letters move `shift` places round the alphabet (and become capitals when `upper`);
// everything else is copied. `shift` and `upper` are 8-bit parameters. (The text is unsigned
// char: nvcc sign-extends a plain char with cvt.s32.s8, which the lowering does not take yet.)
__global__ void char_caesar(const unsigned char* text, unsigned char* out, char shift, bool upper) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  unsigned char c = text[i];
  if (c >= 'a' && c <= 'z') {
    int k = (c - 'a' + shift + 26) % 26;
    c = (unsigned char)((upper ? 'A' : 'a') + k);
  }
  out[i] = c;
}
