// qgpu/kernels/reference/ref_bits.cpp — references: bit intrinsics, division, select and clamp.
#include <bit>

#include "kernels/reference/tables.h"

namespace qgpu::kernels::ref {
namespace {

void popcount(RefArgs& r) {
  auto &x = r.a("x"), &out = r.a("out");
  for (uint32_t t = 0; t < r.blockX; ++t) out[t] = std::popcount(static_cast<uint32_t>(x[t]));
}


void clzFfs(RefArgs& r) {
  auto &x = r.a("x"), &clz = r.a("clz"), &ffs = r.a("ffs");
  for (uint32_t t = 0; t < r.blockX; ++t) {
    uint32_t v = static_cast<uint32_t>(x[t]);
    clz[t] = std::countl_zero(v);  // 32 for 0
    ffs[t] = v == 0 ? 0 : std::countr_zero(v) + 1;
  }
}

uint32_t reverseBits(uint32_t v) {
  uint32_t out = 0;
  for (int i = 0; i < 32; ++i) out |= ((v >> i) & 1u) << (31 - i);
  return out;
}

void brev(RefArgs& r) {
  auto &x = r.a("x"), &out = r.a("out");
  for (uint32_t t = 0; t < r.blockX; ++t) {
    out[t] = static_cast<int32_t>(reverseBits(static_cast<uint32_t>(x[t])));
  }
}

// CUDA's __byte_perm: bytes 0-3 are x's, 4-7 are y's; result byte i = byte number (s >> 4i) & 7.
void bytePerm(RefArgs& r) {
  auto &x = r.a("x"), &y = r.a("y"), &sel = r.a("sel"), &out = r.a("out");
  for (uint32_t t = 0; t < r.blockX; ++t) {
    uint64_t bytes = (uint64_t{static_cast<uint32_t>(y[t])} << 32) | static_cast<uint32_t>(x[t]);
    uint32_t s = static_cast<uint32_t>(sel[t]);
    uint32_t result = 0;
    for (int i = 0; i < 4; ++i) {
      uint32_t which = (s >> (4 * i)) & 7u;
      result |= static_cast<uint32_t>((bytes >> (8 * which)) & 0xffu) << (8 * i);
    }
    out[t] = static_cast<int32_t>(result);
  }
}

void rotateBits(RefArgs& r) {
  auto &x = r.a("x"), &s = r.a("s"), &rotl = r.a("rotl"), &rotr = r.a("rotr");
  for (uint32_t t = 0; t < r.blockX; ++t) {
    uint32_t v = static_cast<uint32_t>(x[t]);
    int k = s[t];
    rotl[t] = static_cast<int32_t>(std::rotl(v, k));
    rotr[t] = static_cast<int32_t>(std::rotr(v, k));
  }
}

void bitfield(RefArgs& r) {
  auto &x = r.a("x"), &field = r.a("field"), &sfield = r.a("sfield"), &ins = r.a("inserted");
  for (uint32_t t = 0; t < r.blockX; ++t) {
    uint32_t v = static_cast<uint32_t>(x[t]);
    uint32_t bits = (v >> 4) & 0xffu;
    field[t] = static_cast<int32_t>(bits);
    sfield[t] = bits >= 0x80 ? static_cast<int32_t>(bits) - 256 : static_cast<int32_t>(bits);
    ins[t] = static_cast<int32_t>((v & ~0xf00u) | ((t & 0xfu) << 8));
  }
}
}  // namespace

void addBitKernels(Table& t) {
  t["popcount"] = popcount;
  t["clz_ffs"] = clzFfs;
  t["brev"] = brev;
  t["byte_perm"] = bytePerm;
  t["rotate_bits"] = rotateBits;
  t["bitfield"] = bitfield;
}

}  // namespace qgpu::kernels::ref
