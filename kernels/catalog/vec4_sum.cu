// qgpu-kernel: vec4_sum
// summary: 16-byte vector loads (ld.v4.u32 through an aligned struct, as int4 code does) and 8-byte vector stores, plus uchar4-style 4-byte loads of bytes
// launch: grid=1 block=4
// param: in in i32[16] = 1 2 3 4 10 20 30 40 -1 -2 -3 -4 100 0 0 7
// param: bytes in u32[4] = 0x04030201 0xff80017f 0x00000000 0x10203040
// param: pair out i32[8]
// param: bsum out i32[4]
// expect: pair = 3 7 30 70 -3 -7 100 7
// expect: bsum = 10 511 0 160
// tags: vector subword bytes cuda-idioms

struct alignas(16) Int4 { int x, y, z, w; };
struct alignas(8) Int2 { int x, y; };
struct alignas(4) UChar4 { unsigned char x, y, z, w; };

__global__ void vec4_sum(const int* in, const unsigned* bytes, int* pair, int* bsum) {
  unsigned t = threadIdx.x;
  Int4 v = reinterpret_cast<const Int4*>(in)[t];
  Int2 p;
  p.x = v.x + v.y;
  p.y = v.z + v.w;
  reinterpret_cast<Int2*>(pair)[t] = p;
  UChar4 c = reinterpret_cast<const UChar4*>(bytes)[t];
  bsum[t] = c.x + c.y + c.z + c.w;
}
