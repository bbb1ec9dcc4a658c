// qgpu-kernel: tile4_reduce_ops
// summary: templated butterfly reductions over tiled_partition<4> tiles (shfl_xor) with sum, max, min and xor function objects; every rank gets the tile's results
// launch: grid=1 block=12
// param: in in i32[12] = 5 -2 9 0 100 3 -50 7 1 1 1 1
// param: sum out i32[12]
// param: hi out i32[3]
// param: lo out i32[3]
// param: x out u32[3]
// expect: sum = 12 12 12 12 60 60 60 60 4 4 4 4
// expect: hi = 9 100 1
// expect: lo = -2 -50 1
// expect: x = 4294967282 4294967214 0
// tags: reduction shuffles warp cooperative-groups cuda-idioms

#include <cooperative_groups.h>
namespace cg = cooperative_groups;

// A butterfly over the tile: after log2(4) shfl_xor steps every rank holds op over the tile (the
// way cg::reduce computes it on sm_75; <cooperative_groups/reduce.h> itself is not used because
// nvcc's brings libcu++ objects as module-level .global variables, which the front end refuses).
template <class Op>
__device__ int tile_reduce(const cg::thread_block_tile<4>& tile, int v, Op op) {
  for (int d = tile.size() / 2; d > 0; d /= 2) v = op(v, tile.shfl_xor(v, d));
  return v;
}
struct Plus { __device__ int operator()(int a, int b) const { return a + b; } };
struct Max { __device__ int operator()(int a, int b) const { return max(a, b); } };
struct Min { __device__ int operator()(int a, int b) const { return min(a, b); } };
struct Xor { __device__ int operator()(int a, int b) const { return a ^ b; } };

// Each tile of 4 threads reduces its values four ways; every rank writes the sum (all ranks hold
// it), rank 0 the maximum, minimum and xor, indexed by the tile's meta_group_rank().
__global__ void tile4_reduce_ops(const int* in, int* sum, int* hi, int* lo, unsigned* x) {
  cg::thread_block block = cg::this_thread_block();
  cg::thread_block_tile<4> tile = cg::tiled_partition<4>(block);
  int v = in[block.thread_rank()];
  sum[block.thread_rank()] = tile_reduce(tile, v, Plus());
  int m = tile_reduce(tile, v, Max());
  int n = tile_reduce(tile, v, Min());
  unsigned e = (unsigned)tile_reduce(tile, v, Xor());
  if (tile.thread_rank() == 0) {
    hi[tile.meta_group_rank()] = m;
    lo[tile.meta_group_rank()] = n;
    x[tile.meta_group_rank()] = e;
  }
}
