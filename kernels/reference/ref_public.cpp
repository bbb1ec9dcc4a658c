// qgpu/kernels/reference/ref_public.cpp — references: the second batch of kernels in the idioms of
// public CUDA code (issue 11 item 8): cooperative-groups reductions, the SharedMemory<T> helper,
// bool and char arrays, sub-word value parameters, int4/uint2/uchar4 arrays, a last-block-done
// reduction, coalesced groups, cg::reduce on tiles, a short scan. Sequential C++ written from
// each kernel's source; word-packed arrays as in tables.h.
#include <algorithm>

#include "kernels/reference/tables.h"

namespace qgpu::kernels::ref {
namespace {

void cgReduceSum(RefArgs& r) {
  auto &in = r.a("in"), &sums = r.a("sums"), &total = r.a("total");
  for (uint32_t b = 0; b < r.gridX; ++b) {
    int32_t sum = 0;
    for (uint32_t t = 0; t < r.blockX; ++t) sum = wrapAdd(sum, in[b * r.blockX + t]);
    sums[b] = sum;
    total[0] = wrapAdd(total[0], sum);
  }
}

void sharedMemoryReduce(RefArgs& r) {
  auto &in = r.a("in"), &out = r.a("out");
  const auto n = u(r.s("n"));
  const uint32_t blockSize = 8;  // the instantiation's template argument
  for (uint32_t b = 0; b < r.gridX; ++b) {
    uint32_t sum = 0;
    for (uint32_t i = b * 2 * blockSize; i < (b + 1) * 2 * blockSize; ++i)
      if (i < n) sum += u(in[i]);
    out[b] = s(sum);
  }
}

void boolSieve(RefArgs& r) {
  auto &prime = r.a("prime"), &count = r.a("count");
  int32_t c = 0;
  for (uint32_t i = 0; i < 40; ++i) {
    bool isPrime = i >= 2;
    for (uint32_t d = 2; d * d <= i; ++d)
      if (i % d == 0) isPrime = false;
    setPacked(prime, i, 8, isPrime ? 1 : 0);
    c += isPrime ? 1 : 0;
  }
  count[0] = c;
}

void charCaesar(RefArgs& r) {
  auto &text = r.a("text"), &out = r.a("out");
  const int32_t shift = r.s("shift");
  const bool upper = r.s("upper") != 0;
  for (uint32_t i = 0; i < r.threads(); ++i) {
    auto c = static_cast<int32_t>(getPacked(text, i, 8));  // unsigned char
    if (c >= 'a' && c <= 'z') c = (upper ? 'A' : 'a') + (c - 'a' + shift + 26) % 26;
    setPacked(out, i, 8, u(c));
  }
}

void int4Add(RefArgs& r) {
  auto &bias = r.a("bias"), &a = r.a("a"), &b = r.a("b"), &c = r.a("c");
  for (uint32_t i = 0; i < r.blockX; ++i) {
    c[4 * i] = wrapAdd(wrapAdd(a[4 * i], b[4 * i]), bias[0]);
    c[4 * i + 1] = wrapSub(a[4 * i + 1], b[4 * i + 1]);
    c[4 * i + 2] = wrapMul(a[4 * i + 2], b[4 * i + 2]);
    c[4 * i + 3] = a[4 * i + 3] ^ b[4 * i + 3];
  }
}

void uint2Feistel(RefArgs& r) {
  auto &in = r.a("in"), &out = r.a("out");
  const uint32_t key = u(r.s("key"));
  for (uint32_t i = 0; i < r.threads(); ++i) {
    const uint32_t x = u(in[2 * i]), y = u(in[2 * i + 1]);
    out[2 * i] = s(y ^ key);
    out[2 * i + 1] = s(x + (y >> 3));
  }
}

void fenceLastBlock(RefArgs& r) {
  auto &in = r.a("in"), &partial = r.a("partial"), &counter = r.a("counter"), &result = r.a("result");
  int32_t sum = 0;
  for (uint32_t b = 0; b < r.gridX; ++b) {
    int32_t p = 0;
    for (uint32_t t = 0; t < r.blockX; ++t) p = wrapAdd(p, in[b * r.blockX + t]);
    partial[b] = p;
    sum = wrapAdd(sum, p);
  }
  result[0] = sum;
  counter[0] = 0;  // gridX tickets of atomicInc(counter, gridX - 1) wrap it back to 0
}

void cgCoalescedFilter(RefArgs& r) {
  auto &in = r.a("in"), &out = r.a("out"), &count = r.a("count"), &info = r.a("info");
  uint32_t n = 0;
  for (int32_t v : in)
    if (v & 1) out[n++] = v;  // one order of the multiset
  count[0] = s(n);
  // Groups: the odd-valued threads of each 4-thread warp (block = 4: one warp per block).
  for (uint32_t w = 0; w < r.threads() / 4; ++w) {
    uint32_t size = 0;
    bool any = false, all = true;
    for (uint32_t l = 0; l < 4; ++l) {
      const int32_t v = in[4 * w + l];
      if (!(v & 1)) continue;
      any = any || v > 5;
      all = all && v > 0;
      ++size;
    }
    uint32_t rank = 0;
    for (uint32_t l = 0; l < 4; ++l) {
      const int32_t v = in[4 * w + l];
      info[4 * w + l] = -1;
      if (!(v & 1)) continue;
      info[4 * w + l] = s(rank | size << 4 | uint32_t{any} << 8 | uint32_t{all} << 9);
      ++rank;
    }
  }
}

void tile4ReduceOps(RefArgs& r) {
  auto &in = r.a("in"), &sum = r.a("sum"), &hi = r.a("hi"), &lo = r.a("lo"), &x = r.a("x");
  for (uint32_t tile = 0; tile < r.blockX / 4; ++tile) {
    int32_t total = 0, mx = in[4 * tile], mn = in[4 * tile];
    uint32_t e = 0;
    for (uint32_t k = 0; k < 4; ++k) {
      const int32_t v = in[4 * tile + k];
      total = wrapAdd(total, v);
      mx = std::max(mx, v);
      mn = std::min(mn, v);
      e ^= u(v);
    }
    for (uint32_t k = 0; k < 4; ++k) sum[4 * tile + k] = total;
    hi[tile] = mx;
    lo[tile] = mn;
    x[tile] = s(e);
  }
}

void uchar4Histogram(RefArgs& r) {
  auto &data = r.a("data"), &hist = r.a("hist");
  for (uint32_t i = 0; i < 4 * r.threads(); ++i) ++hist[getPacked(data, i, 8) >> 4];
}

void shortScan(RefArgs& r) {
  auto &in = r.a("in"), &out = r.a("out");
  int32_t running = 0;
  for (uint32_t t = 0; t < r.blockX; ++t) {
    running += signedField(getPacked(in, t, 16), 16);  // |running| < 2^15 for the catalog's data
    setPacked(out, t, 16, u(running));
  }
}

void shortClampShift(RefArgs& r) {
  auto &in = r.a("in"), &out = r.a("out");
  const int32_t lo = r.s("lo"), hi = r.s("hi"), shift = r.s("shift");
  for (uint32_t i = 0; i < r.blockX; ++i) out[i] = std::min(std::max(in[i], lo), hi) >> shift;  // arithmetic (C++20)
}

}  // namespace

void addPublicKernels(Table& t) {
  t["cg_reduce_sum"] = cgReduceSum;
  t["shared_memory_reduce"] = sharedMemoryReduce;
  t["bool_sieve"] = boolSieve;
  t["char_caesar"] = charCaesar;
  t["int4_add"] = int4Add;
  t["uint2_feistel"] = uint2Feistel;
  t["fence_last_block"] = fenceLastBlock;
  t["cg_coalesced_filter"] = cgCoalescedFilter;
  t["tile4_reduce_ops"] = tile4ReduceOps;
  t["uchar4_histogram"] = uchar4Histogram;
  t["short_scan"] = shortScan;
  t["short_clamp_shift"] = shortClampShift;
}

}  // namespace qgpu::kernels::ref
