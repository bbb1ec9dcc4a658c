// qgpu-kernel: warp_vote
// summary: __ballot_sync, __any_sync and __all_sync of (x > 0) in three one-warp blocks
// launch: grid=3 block=4
// param: in in i32[12] = 1 -2 3 0 5 6 7 8 0 -1 0 -3
// param: ballot out u32[3]
// param: any out i32[3]
// param: all out i32[3]
// expect: ballot = 5 15 0
// expect: any = 1 1 0
// expect: all = 0 1 0
// tags: votes warp multiblock

// Mask 0xf: each 4-thread block is one warp on a real GPU and on the 4-lane machine.
__global__ void warp_vote(const int* in, unsigned* ballot, int* any, int* all) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  int positive = in[i] > 0;
  unsigned b = __ballot_sync(0xf, positive);
  int a = __any_sync(0xf, positive);
  int l = __all_sync(0xf, positive);
  if (threadIdx.x == 0) {
    ballot[blockIdx.x] = b;
    any[blockIdx.x] = a != 0;
    all[blockIdx.x] = l != 0;
  }
}
