// qgpu-kernel: cg_tile_reduce
// summary: cooperative-groups reduction: 4-thread tiles shfl_down, partials in dynamic shared memory
// launch: grid=1 block=16 shared=4
// param: in in i32[16] = 3 1 4 1 5 9 2 6 5 3 5 8 9 7 9 3
// param: out out i32[1]
// param: votes out u32[4]
// expect: out = 80
// expect: votes = 0 27 29 23
// tags: reduction shuffles warp cooperative-groups dynamic-shared cuda-idioms

#include <cooperative_groups.h>
namespace cg = cooperative_groups;

// Tiles of 4 threads are one warp here and a quarter of one on a GPU; either way each tile sums
// its 4 values with shfl_down and tile rank 0 stores the partial; after block.sync() thread 0 adds
// the 4 partials. votes[tile] = the tile's ballot of (value > 4), any and all packed as
// ballot | any << 4 | all << 5.
__global__ void cg_tile_reduce(const int* in, int* out, unsigned* votes) {
  extern __shared__ int partial[];
  cg::thread_block block = cg::this_thread_block();
  cg::thread_block_tile<4> tile = cg::tiled_partition<4>(block);
  int v = in[block.thread_rank()];
  unsigned ballot = tile.ballot(v > 4);
  int any = tile.any(v > 4);
  int all = tile.all(v > 4);
  for (unsigned d = tile.size() / 2; d > 0; d /= 2) v += tile.shfl_down(v, d);
  if (tile.thread_rank() == 0) {
    partial[tile.meta_group_rank()] = v;
    votes[tile.meta_group_rank()] = ballot | (unsigned)any << 4 | (unsigned)all << 5;
  }
  block.sync();
  if (block.thread_rank() == 0) {
    int sum = 0;
    // One load per partial (nvcc would otherwise read them as one ld.shared.v4, which the
    // lowering does not take yet).
#pragma unroll 1
    for (unsigned k = 0; k < tile.meta_group_size(); ++k) sum += partial[k];
    out[0] = sum;
  }
}
