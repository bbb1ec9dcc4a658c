// qgpu-kernel: cg_coalesced_filter
// summary: stream compaction with cg::coalesced_threads(): one atomicAdd per coalesced group, shfl of the base from rank 0, plus the group's size/rank/any/all
// launch: grid=2 block=4
// param: in in i32[8] = 7 2 9 4 1 6 8 3
// param: out out i32[8]
// param: count out u32[1]
// param: info out u32[8]
// expect: out = 7 9 1 3 0 0 0 0
// expect: count = 4
// expect: info = 800 4294967295 801 4294967295 544 4294967295 4294967295 545
// compare: multiset out
// tags: atomics warp compaction cooperative-groups cuda-idioms

#include <cooperative_groups.h>
namespace cg = cooperative_groups;

// Inside `if (v & 1)` the coalesced group is the warp's lanes holding odd values. Its rank 0
// reserves g.size() slots; the others get the base by g.shfl(base, 0) and write at base + rank.
// Where the groups of different warps land depends on the order of their atomics, so `out` is
// compared as a multiset; info[i] (-1 for even values) packs what only the group decides:
// rank | size << 4 | any(v > 5) << 8 | all(v > 0) << 9. (g.ballot is left out: nvcc unrolls
// the toolkit's 32-step bit-packing loop into more blocks than the machine has.)
__global__ void cg_coalesced_filter(const int* in, int* out, unsigned* count, unsigned* info) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  int v = in[i];
  info[i] = 0xffffffffu;
  if (v & 1) {
    cg::coalesced_group g = cg::coalesced_threads();
    unsigned base = 0;
    if (g.thread_rank() == 0) base = atomicAdd(count, g.size());
    base = g.shfl(base, 0);
    out[base + g.thread_rank()] = v;
    info[i] = g.thread_rank() | g.size() << 4 | (unsigned)g.any(v > 5) << 8 | (unsigned)g.all(v > 0) << 9;
  }
}
