// qgpu/kernels/reference/ref_sync.cpp — references: atomics, warp votes and shuffles, barriers.
#include "kernels/reference/tables.h"

namespace qgpu::kernels::ref {
namespace {

// Per 4-thread block (one warp): ballot of (x > 0), any, all.
void warpVote(RefArgs& r) {
  auto &in = r.a("in"), &ballot = r.a("ballot"), &any = r.a("any"), &all = r.a("all");
  for (uint32_t b = 0; b < r.gridX; ++b) {
    uint32_t bits = 0;
    for (uint32_t lane = 0; lane < r.blockX; ++lane) {
      if (in[b * r.blockX + lane] > 0) bits |= 1u << lane;
    }
    ballot[b] = static_cast<int32_t>(bits);
    any[b] = bits != 0;
    all[b] = bits == (1u << r.blockX) - 1;
  }
}

void syncCount(RefArgs& r) {
  auto &in = r.a("in"), &result = r.a("result");
  int count = 0;
  bool all = true, any = false;
  for (uint32_t t = 0; t < r.blockX; ++t) {
    count += in[t] > 0;
    all = all && in[t] > -10;
    any = any || in[t] > 100;
  }
  result[0] = count;
  result[1] = all;
  result[2] = any;
}

void atomicCasMul(RefArgs& r) {
  auto &in = r.a("in"), &prod = r.a("prod");
  uint32_t p = static_cast<uint32_t>(prod[0]);
  for (uint32_t t = 0; t < r.blockX; ++t) p *= static_cast<uint32_t>(in[t]);
  prod[0] = static_cast<int32_t>(p);
}

void atomicExch(RefArgs& r) {
  auto &slots = r.a("slots"), &vals = r.a("vals"), &old = r.a("old");
  for (uint32_t t = 0; t < r.blockX; ++t) {
    old[t] = slots[(t + 1) % 8];
    slots[(t + 1) % 8] = vals[t];
  }
}

// CUDA: atomicInc(p, v): old >= v ? 0 : old + 1; atomicDec(p, v): (old == 0 || old > v) ? v : old - 1.
void atomicIncDec(RefArgs& r) {
  auto& c = r.a("counters");
  uint32_t inc = static_cast<uint32_t>(c[0]), dec = static_cast<uint32_t>(c[1]);
  for (uint32_t t = 0; t < r.blockX; ++t) {
    inc = inc >= 5u ? 0u : inc + 1;
    dec = (dec == 0 || dec > 5u) ? 5u : dec - 1;
  }
  c[0] = static_cast<int32_t>(inc);
  c[1] = static_cast<int32_t>(dec);
}

void atomicBitops(RefArgs& r) {
  auto &in = r.a("in"), &acc = r.a("acc");
  for (uint32_t t = 0; t < r.blockX; ++t) {
    acc[0] &= in[t];
    acc[1] |= ~in[t];
    acc[2] ^= in[t];
  }
}

void atomicSub(RefArgs& r) {
  auto &in = r.a("in"), &counter = r.a("counter");
  for (uint32_t t = 0; t < r.blockX; ++t) counter[0] = wrapSub(counter[0], in[t]);
}

// Per 4-lane warp: rot[i] = value of lane (i+1)%4, bcast[i] = value of lane 2.
void shflBroadcast(RefArgs& r) {
  auto &in = r.a("in"), &rot = r.a("rot"), &bcast = r.a("bcast");
  for (size_t i = 0; i < in.size(); ++i) {
    size_t warp = i - i % 4;
    rot[i] = in[warp + (i + 1) % 4];
    bcast[i] = in[warp + 2];
  }
}
}  // namespace

void addSyncKernels(Table& t) {
  t["warp_vote"] = warpVote;
  t["sync_count"] = syncCount;
  t["atomic_cas_mul"] = atomicCasMul;
  t["atomic_exch"] = atomicExch;
  t["atomic_inc_dec"] = atomicIncDec;
  t["atomic_bitops"] = atomicBitops;
  t["atomic_sub"] = atomicSub;
  t["shfl_broadcast"] = shflBroadcast;
}

}  // namespace qgpu::kernels::ref
