// qgpu-kernel: warp_agg_atomic
// summary: warp-aggregated atomics: one atomicAdd per warp with __activemask, ballot and popc
// launch: grid=3 block=4
// param: in in i32[12] = 7 2 9 4 1 1 8 3 6 6 6 5
// param: out out i32[12]
// param: count out u32[1]
// expect: out = 7 9 1 1 3 5 0 0 0 0 0 0
// expect: count = 6
// compare: multiset out
// tags: atomics warp compaction cuda-idioms

// Stream compaction of the odd values: the warp's leader (lowest lane with an odd value) reserves
// room for all of them with one atomicAdd and broadcasts the base; each lane writes at base + the
// number of odd lanes below it. Positions depend on the order of the warps: out is compared as a
// multiset (the unused tail stays 0).
__global__ void warp_agg_atomic(const int* in, int* out, unsigned* count) {
  unsigned lane = threadIdx.x % warpSize;
  int v = in[blockIdx.x * blockDim.x + threadIdx.x];
  unsigned active = __activemask();
  unsigned odd = __ballot_sync(active, v & 1);
  int leader = __ffs(odd) - 1;
  unsigned base = 0;
  if (lane == (unsigned)leader) base = atomicAdd(count, (unsigned)__popc(odd));
  base = __shfl_sync(active, base, leader < 0 ? 0 : leader);
  if (v & 1) out[base + __popc(odd & ((1u << lane) - 1u))] = v;
}
