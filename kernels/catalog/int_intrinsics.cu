// qgpu-kernel: int_intrinsics
// summary: the integer intrinsics __umulhi __mulhi __umul24 __mul24 __usad __sad umin umax
// launch: grid=1 block=4
// param: a in u32[4] = 4294967293 4294967294 4294967295 0
// param: b in i32[4] = 5 4 -3 -8388609
// param: out out u32[28]
// param: k scalar u32 = 2654435769
// expect: out = 2654435767 2654435767 2654435768 0 4294967295 4294967295 0 2411 50331639 50331642 50331645 0 4294967286 4294967288 6 4278190082 90 91 92 107 102 101 106 8388712 2 3 4 5
// tags: bits intrinsics cuda-idioms

#include <cstdint>

// Seven results per thread, one array of 4 per intrinsic. The 24-bit multiplies see only the low
// 24 bits of their inputs (sign-extended from bit 23 for __mul24): b[3] = -8388609 is 0xff7fffff,
// whose low 24 bits are the positive 0x7fffff.
__global__ void int_intrinsics(const uint32_t* a, const int32_t* b, uint32_t* out, uint32_t k) {
  unsigned t = threadIdx.x;
  uint32_t u = a[t];
  int32_t i = b[t];
  out[0 + t] = __umulhi(u, k);
  out[4 + t] = (uint32_t)__mulhi(i, -1234567);
  out[8 + t] = __umul24(u, 0x01000003u);
  out[12 + t] = (uint32_t)__mul24(i, 0x00fffffe);
  out[16 + t] = __usad(u, 7u, 100u);
  out[20 + t] = __sad(i, 3, 100u);
  out[24 + t] = umin(u, 5u) + umax(u, 5u);
}
