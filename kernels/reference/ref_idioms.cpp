// qgpu/kernels/reference/ref_idioms.cpp — references: kernels in the idioms of public CUDA code
// (integer intrinsics, templates, dynamic and module-scope shared memory, cooperative groups,
// warp-aggregated atomics, fences). Each intrinsic is written out from its CUDA definition.
#include <cstdlib>

#include "kernels/reference/tables.h"

namespace qgpu::kernels::ref {
namespace {

// The low 24 bits as a signed 24-bit number.
int64_t low24Signed(uint32_t v) {
  int64_t x = v & 0xffffff;
  return x >= (1 << 23) ? x - (1 << 24) : x;
}

void intIntrinsics(RefArgs& r) {
  auto &a = r.a("a"), &b = r.a("b"), &out = r.a("out");
  const uint64_t k = u(r.s("k"));
  for (uint32_t t = 0; t < 4; ++t) {
    uint64_t x = u(a[t]);
    int64_t i = b[t];
    out[0 + t] = s(static_cast<uint32_t>((x * k) >> 32));                                // __umulhi
    out[4 + t] = s(static_cast<uint32_t>(static_cast<uint64_t>(i * -1234567) >> 32));   // __mulhi
    out[8 + t] = s(static_cast<uint32_t>((x & 0xffffff) * (0x01000003u & 0xffffff)));   // __umul24
    out[12 + t] = s(static_cast<uint32_t>(static_cast<uint64_t>(low24Signed(u(b[t])) *
                                                               low24Signed(0x00fffffe))));  // __mul24
    out[16 + t] = s(static_cast<uint32_t>(100 + (x > 7 ? x - 7 : 7 - x)));              // __usad
    out[20 + t] = s(static_cast<uint32_t>(100 + static_cast<uint64_t>(std::llabs(i - 3))));  // __sad
    out[24 + t] = s(static_cast<uint32_t>((x < 5 ? x : 5) + (x > 5 ? x : 5)));          // umin+umax
  }
}

void blockReduceDyn(RefArgs& r) {
  auto &in = r.a("in"), &out = r.a("out");
  const int32_t n = r.s("n");
  for (uint32_t blk = 0; blk < r.gridX; ++blk) {
    int32_t sum = 0;
    for (uint32_t t = 0; t < r.blockX; ++t) {
      int32_t i = static_cast<int32_t>(blk * r.blockX + t);
      if (i < n) sum = wrapAdd(sum, in[static_cast<size_t>(i)]);
    }
    out[blk] = sum;
  }
}

void explicitInstance(RefArgs& r) {
  auto &x = r.a("x"), &y = r.a("y");
  for (uint32_t i = 0; i < r.blockX; ++i) y[i] = s(u(x[i]) * u(r.s("scale")) + 7);
}

void cgTileReduce(RefArgs& r) {
  auto &in = r.a("in"), &out = r.a("out"), &votes = r.a("votes");
  int32_t sum = 0;
  for (uint32_t tile = 0; tile < r.blockX / 4; ++tile) {
    uint32_t ballot = 0;
    for (uint32_t rank = 0; rank < 4; ++rank) {
      int32_t v = in[tile * 4 + rank];
      sum = wrapAdd(sum, v);
      if (v > 4) ballot |= 1u << rank;
    }
    votes[tile] = s(ballot | (ballot != 0 ? 1u : 0u) << 4 | (ballot == 0xf ? 1u : 0u) << 5);
  }
  out[0] = sum;
}

void warpAggAtomic(RefArgs& r) {
  auto &in = r.a("in"), &out = r.a("out"), &count = r.a("count");
  uint32_t n = 0;
  for (int32_t v : in)
    if (v & 1) out[n++] = v;  // one order of the multiset
  count[0] = s(n);
}

void lastBlockFence(RefArgs& r) {
  auto &in = r.a("in"), &partial = r.a("partial"), &ticket = r.a("ticket"), &out = r.a("out");
  int32_t sum = 0;
  for (uint32_t blk = 0; blk < r.gridX; ++blk) {
    int32_t p = 0;
    for (uint32_t t = 0; t < r.blockX; ++t) p = wrapAdd(p, in[blk * r.blockX + t]);
    partial[blk] = p;
    sum = wrapAdd(sum, p);
  }
  out[0] = sum;
  ticket[0] = 0;  // the last block resets it
}

}  // namespace

void addIdiomKernels(Table& t) {
  t["int_intrinsics"] = intIntrinsics;
  t["block_reduce_dyn"] = blockReduceDyn;
  t["explicit_instance"] = explicitInstance;
  t["cg_tile_reduce"] = cgTileReduce;
  t["warp_agg_atomic"] = warpAggAtomic;
  t["last_block_fence"] = lastBlockFence;
}

}  // namespace qgpu::kernels::ref
