// qgpu-kernel: short_div
// summary: 16-bit division and remainder, signed and unsigned, with INT16_MIN / -1 and negative operands; signed and unsigned char conversions of the same values
// launch: grid=1 block=8
// param: num in u32[4] = 0xfff98000 0x00070007 0x7fff8001 0xffff1234
// param: den in u32[4] = 0x0002ffff 0xfffe0002 0x00030100 0x0001ff80
// param: quo out u32[4]
// param: rem out u32[4]
// param: uq out u32[4]
// param: mix out i32[8]
// expect: quo = 4294803456 4294770691 715849601 4294967260
// expect: rem = 4294901760 65537 130817 52
// expect: uq = 2147319808 458756 715849857 4294906420
// expect: mix = 255 -19 23 275 3 0 284 -2
// tags: subword halfwords int16 cuda-idioms

// num and den are short arrays (halfword i of word i / 2). C promotes the shorts to int, so
// -32768 / -1 is 32768 and stored back as a short it is -32768; the unsigned quotient of the
// same bits is computed on unsigned short. mix reads the low byte of num as signed char and of
// den as unsigned char.
__global__ void short_div(const short* num, const short* den, short* quo, short* rem,
                          unsigned short* uq, int* mix) {
  unsigned t = threadIdx.x;
  short p = num[t], q = den[t];
  quo[t] = (short)(p / q);
  rem[t] = (short)(p % q);
  unsigned short up = (unsigned short)p, uqv = (unsigned short)q;
  uq[t] = (unsigned short)(up / uqv + up % uqv);
  mix[t] = (signed char)p * 3 + (unsigned char)q;
}
