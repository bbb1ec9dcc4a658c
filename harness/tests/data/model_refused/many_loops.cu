// qgpu-kernel: many_loops
// summary: refusal fixture: 7 loops and a division fill 31 of the 32 program blocks, so the circuit target's mulhi.s (16-bit halves over a split block) would need 34 — refused before any model is built
// launch: grid=1 block=4
// param: in in u32[24] = 1 2 3 1 2 3 1 2 3 1 2 3 1 2 3 1 2 3 1 2 3 1 2 3
// param: out out u32[16]
// expect: out = 4294967295 4294967294 1 0 1298651632 2145356660 1302905604 456200576 1 0 3 2 4294967292 4294967291 4294967294 4294967293

__global__ void many_loops(const unsigned* in, unsigned* out) {
  unsigned x = threadIdx.x * 0x9e3779b9u + 0x7f4a7c15u;
#pragma unroll 1
  for (unsigned i = 0; i < in[0]; ++i) x = x * 3u + i;
#pragma unroll 1
  for (unsigned i = 0; i < in[1]; ++i) x = x * 3u + i;
#pragma unroll 1
  for (unsigned i = 0; i < in[2]; ++i) x = x * 3u + i;
#pragma unroll 1
  for (unsigned i = 0; i < in[3]; ++i) x = x * 3u + i;
#pragma unroll 1
  for (unsigned i = 0; i < in[4]; ++i) x = x * 3u + i;
#pragma unroll 1
  for (unsigned i = 0; i < in[5]; ++i) x = x * 3u + i;
#pragma unroll 1
  for (unsigned i = 0; i < in[6]; ++i) x = x * 3u + i;
  x = x / (in[21] | 1u);
  int h = __mulhi((int)x, (int)(in[20] + threadIdx.x));
  out[threadIdx.x] = h;
  out[threadIdx.x + 4] = h ^ x;
  out[threadIdx.x + 8] = h + in[22];
  out[threadIdx.x + 12] = h - in[23];
}
