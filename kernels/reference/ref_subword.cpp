// qgpu/kernels/reference/ref_subword.cpp — references: byte, bool and halfword arrays (word-packed,
// little-endian, kernels/README.md) and vector loads and stores.
#include "kernels/reference/tables.h"

namespace qgpu::kernels::ref {
namespace {

void byteFlags(RefArgs& r) {
  auto &in = r.a("in"), &flags = r.a("flags");
  const auto n = static_cast<uint32_t>(r.s("n"));
  for (uint32_t i = 0; i < r.threads(); ++i)
    if (i < n) setPacked(flags, i, 8, in[i] > 0 ? 1 : 0);
}

void boolCount(RefArgs& r) {
  auto &x = r.a("x"), &hit = r.a("hit"), &count = r.a("count");
  int32_t c = 0;
  for (uint32_t t = 0; t < r.blockX; ++t) {
    const bool h = x[t] % 3 == 0;  // C++ and CUDA: the remainder has the dividend's sign
    setPacked(hit, t, 8, h ? 1 : 0);
    c += h ? 1 : 0;
  }
  count[0] = c;
}

void ucharHistogram(RefArgs& r) {
  auto &data = r.a("data"), &hist = r.a("hist"), &small = r.a("small");
  const auto n = static_cast<uint32_t>(r.s("n"));
  const uint32_t half = n / r.gridX;
  for (uint32_t cta = 0; cta < r.gridX; ++cta) {
    int32_t bins[8] = {};
    for (uint32_t i = cta * half; i < (cta + 1) * half; ++i) ++bins[getPacked(data, i, 8) & 7];
    for (uint32_t b = 0; b < 8; ++b) {
      hist[b] += bins[b];
      setPacked(small, cta * 8 + b, 8, static_cast<uint32_t>(bins[b]));
    }
  }
}

void shortAffine(RefArgs& r) {
  auto &in = r.a("in"), &out = r.a("out"), &neg = r.a("neg");
  for (uint32_t t = 0; t < r.blockX; ++t) {
    const int32_t v = signedField(getPacked(in, t, 16), 16);
    // (short)(v * 3 - 100): the int result truncated to 16 bits (|v * 3 - 100| < 2^31: no overflow).
    setPacked(out, t, 16, static_cast<uint32_t>(v * 3 - 100));
    neg[t] = v < 0 ? -1 : 1;
  }
}

void vec4Sum(RefArgs& r) {
  auto &in = r.a("in"), &bytes = r.a("bytes"), &pair = r.a("pair"), &bsum = r.a("bsum");
  for (uint32_t t = 0; t < r.blockX; ++t) {
    pair[2 * t] = wrapAdd(in[4 * t], in[4 * t + 1]);
    pair[2 * t + 1] = wrapAdd(in[4 * t + 2], in[4 * t + 3]);
    int32_t sum = 0;
    for (uint32_t k = 0; k < 4; ++k) sum += static_cast<int32_t>(getPacked(bytes, 4 * t + k, 8));
    bsum[t] = sum;
  }
}

}  // namespace

void addSubwordKernels(Table& t) {
  t["byte_flags"] = byteFlags;
  t["bool_count"] = boolCount;
  t["uchar_histogram"] = ucharHistogram;
  t["short_affine"] = shortAffine;
  t["vec4_sum"] = vec4Sum;
}

}  // namespace qgpu::kernels::ref
