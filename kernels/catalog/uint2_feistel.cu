// qgpu-kernel: uint2_feistel
// summary: one Feistel-style round on uint2 pairs (8-byte ld.v2/st.v2 through uint2* parameters)
// launch: grid=2 block=4
// param: in in u32[16] = 0 1 2 3 0xdeadbeef 0x01234567 0x89abcdef 0xffffffff 10 20 30 40 0x80000000 7 65536 65535
// param: out out u32[16]
// param: key scalar u32 = 0x9e3779b9
// expect: out = 2654435768 0 2654435770 2 2668903646 3738314651 1640531526 2846608878 2654435757 12 2654435729 35 2654435774 2147483648 2654438982 73727
// tags: vector bits cuda-idioms

__global__ void uint2_feistel(const uint2* in, uint2* out, uint key) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  uint2 v = in[i];
  out[i] = make_uint2(v.y ^ key, v.x + (v.y >> 3));
}
