// qgpu/kernels/reference/ref_reduce.cpp — references: dot products, scans, histograms, min/max.
#include <algorithm>

#include "kernels/reference/tables.h"

namespace qgpu::kernels::ref {
namespace {

int32_t dotOf(const std::vector<int32_t>& a, const std::vector<int32_t>& b, int n) {
  int32_t sum = 0;
  for (int i = 0; i < n; ++i) sum = wrapAdd(sum, wrapMul(a[i], b[i]));
  return sum;
}

// out[0] += u.v over n elements (the kernels accumulate into out with atomicAdd).
void dot(RefArgs& r) {
  auto& out = r.a("out");
  out[0] = wrapAdd(out[0], dotOf(r.a("u"), r.a("v"), r.s("n")));
}

void sqlen(RefArgs& r) {
  auto& out = r.a("out");
  out[0] = wrapAdd(out[0], dotOf(r.a("v"), r.a("v"), r.s("n")));
}

void dotAtomic(RefArgs& r) {
  auto& out = r.a("out");
  int n = std::min<int>(r.s("n"), static_cast<int>(r.blockX));
  out[0] = wrapAdd(out[0], dotOf(r.a("a"), r.a("b"), n));
}

// Whole-array dot product written to (or added to) out[0].
void dotWhole(RefArgs& r) {
  auto &a = r.a("a"), &out = r.a("out");
  out[0] = wrapAdd(out[0], dotOf(a, r.a("b"), static_cast<int>(a.size())));
}

void scanInclusive(RefArgs& r) {
  auto &in = r.a("in"), &out = r.a("out");
  int32_t sum = 0;
  for (size_t i = 0; i < in.size(); ++i) out[i] = sum = wrapAdd(sum, in[i]);
}

void histogram(RefArgs& r) {
  auto &data = r.a("data"), &bins = r.a("bins");
  for (uint32_t t = 0; t < r.blockX; ++t) bins[data[t]] += 1;
}

void compaction(RefArgs& r) {
  auto &in = r.a("in"), &out = r.a("out"), &count = r.a("count");
  for (uint32_t i = 0; i < r.threads(); ++i) {
    if (in[i] > r.s("threshold")) out[count[0]++] = in[i];
  }
}


// Inclusive scan restarted at every 4-element segment (one warp per segment).
void scanPerWarp(RefArgs& r) {
  auto &in = r.a("in"), &out = r.a("out");
  int32_t sum = 0;
  for (size_t i = 0; i < in.size(); ++i) {
    if (i % 4 == 0) sum = 0;
    out[i] = sum = wrapAdd(sum, in[i]);
  }
}

void histogramShared(RefArgs& r) {
  auto &data = r.a("data"), &bins = r.a("bins");
  std::vector<int32_t> local(4, 0);
  for (uint32_t t = 0; t < r.blockX; ++t) local[data[t] & 3] += 1;
  for (int b = 0; b < 4; ++b) bins[b] = local[b];
}

void reduceMin(RefArgs& r) {
  auto &in = r.a("in"), &out = r.a("out");
  for (uint32_t t = 0; t < r.threads(); ++t) out[0] = std::min(out[0], in[t]);
}

void reduceMax(RefArgs& r) {
  auto &in = r.a("in"), &out = r.a("out");
  for (uint32_t t = 0; t < r.threads(); ++t) out[0] = std::max(out[0], in[t]);
}

// Maximum and the lowest index holding it.
void argmax(RefArgs& r) {
  auto &in = r.a("in"), &out = r.a("out");
  int best = 0;
  for (uint32_t t = 1; t < r.blockX; ++t) {
    if (in[t] > in[best]) best = static_cast<int>(t);
  }
  out[0] = in[best];
  out[1] = best;
}

void countIf(RefArgs& r) {
  auto &in = r.a("in"), &count = r.a("count");
  for (uint32_t t = 0; t < r.blockX; ++t) {
    if (in[t] >= r.s("lo") && in[t] < r.s("hi")) count[0] += 1;
  }
}

void multiblockReduce(RefArgs& r) {
  auto &in = r.a("in"), &partial = r.a("partial"), &total = r.a("total");
  for (uint32_t b = 0; b < r.gridX; ++b) {
    int32_t sum = 0;
    for (uint32_t t = 0; t < r.blockX; ++t) sum = wrapAdd(sum, in[b * r.blockX + t]);
    partial[b] = sum;
    total[0] = wrapAdd(total[0], sum);
  }
}

// Per 4-lane warp: every lane gets the warp's sum and maximum.
void shflXorAllreduce(RefArgs& r) {
  auto &in = r.a("in"), &sum = r.a("sum"), &mx = r.a("mx");
  for (size_t w = 0; w < in.size(); w += 4) {
    int32_t s = 0, m = in[w];
    for (size_t k = w; k < w + 4; ++k) {
      s = wrapAdd(s, in[k]);
      m = std::max(m, in[k]);
    }
    for (size_t k = w; k < w + 4; ++k) {
      sum[k] = s;
      mx[k] = m;
    }
  }
}

void checksumMod255(RefArgs& r) {
  auto &data = r.a("data"), &out = r.a("out");
  for (uint32_t t = 0; t < r.blockX; ++t) {
    uint32_t sum1 = 0, sum2 = 0;
    for (int k = 0; k < 8; ++k) {
      sum1 = (sum1 + static_cast<uint32_t>(data[t * 8 + k])) % 255;
      sum2 = (sum2 + sum1) % 255;
    }
    out[t] = static_cast<int32_t>((sum2 << 8) | sum1);
  }
}
}  // namespace

void addReductionKernels(Table& t) {
  t["dot"] = dot;
  t["sqlen"] = sqlen;
  t["dot_atomic"] = dotAtomic;
  t["dot_shared_tree"] = dotWhole;
  t["dot_shfl"] = dotWhole;
  t["scan_hillis_steele"] = scanInclusive;
  t["histogram"] = histogram;
  t["compaction"] = compaction;
  t["scan_shfl"] = scanPerWarp;
  t["histogram_shared"] = histogramShared;
  t["reduce_min_atomic"] = reduceMin;
  t["reduce_max_atomic"] = reduceMax;
  t["argmax"] = argmax;
  t["count_if"] = countIf;
  t["multiblock_reduce"] = multiblockReduce;
  t["shfl_xor_allreduce"] = shflXorAllreduce;
  t["checksum_mod255"] = checksumMod255;
}

}  // namespace qgpu::kernels::ref
