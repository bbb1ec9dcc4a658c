// qgpu/kernels/reference/ref_bits.cpp — references: bit intrinsics, division, select and clamp.
#include <algorithm>
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

void divmodSigned(RefArgs& r) {
  auto &a = r.a("a"), &b = r.a("b"), &q = r.a("q"), &rem = r.a("r");
  for (uint32_t t = 0; t < r.blockX; ++t) {
    q[t] = a[t] / b[t];  // C++ also truncates toward zero
    rem[t] = a[t] % b[t];
  }
}

void divmodUnsigned(RefArgs& r) {
  auto &a = r.a("a"), &b = r.a("b"), &q = r.a("q"), &rem = r.a("r");
  for (uint32_t t = 0; t < r.blockX; ++t) {
    uint32_t x = static_cast<uint32_t>(a[t]), y = static_cast<uint32_t>(b[t]);
    q[t] = static_cast<int32_t>(x / y);
    rem[t] = static_cast<int32_t>(x % y);
  }
}

void divConst(RefArgs& r) {
  auto &in = r.a("in"), &q3 = r.a("q3"), &r7 = r.a("r7"), &u10 = r.a("u10"), &d4 = r.a("d4");
  for (uint32_t t = 0; t < r.blockX; ++t) {
    int32_t v = in[t];
    q3[t] = v / 3;
    r7[t] = v % 7;
    u10[t] = static_cast<int32_t>(static_cast<uint32_t>(v) / 10u);
    d4[t] = v / 4;
  }
}

void clampSelect(RefArgs& r) {
  auto &in = r.a("in"), &clamped = r.a("clamped"), &sel = r.a("sel");
  for (uint32_t t = 0; t < r.blockX; ++t) {
    int32_t v = in[t];
    clamped[t] = v < r.s("lo") ? r.s("lo") : (v > r.s("hi") ? r.s("hi") : v);
    sel[t] = (v % 2 != 0) ? v : wrapSub(0, v);
  }
}

void absDiff(RefArgs& r) {
  auto &a = r.a("a"), &b = r.a("b"), &diff = r.a("diff"), &lo = r.a("lo"), &hi = r.a("hi");
  for (uint32_t t = 0; t < r.blockX; ++t) {
    int32_t d = wrapSub(a[t], b[t]);
    diff[t] = d < 0 ? wrapSub(0, d) : d;
    lo[t] = std::min(a[t], b[t]);
    hi[t] = std::max(a[t], b[t]);
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
  t["divmod_signed"] = divmodSigned;
  t["divmod_unsigned"] = divmodUnsigned;
  t["div_const"] = divConst;
  t["clamp_select"] = clampSelect;
  t["abs_diff"] = absDiff;
}

}  // namespace qgpu::kernels::ref
