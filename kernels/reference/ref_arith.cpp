// qgpu/kernels/reference/ref_arith.cpp — references: integer arithmetic at the widths compilers
// emit (long long on word pairs, short and char values, narrowed call arguments).
#include "kernels/reference/tables.h"

namespace qgpu::kernels::ref {
namespace {

void int64Ops(RefArgs& r) {
  auto &a = r.a("a"), &b = r.a("b"), &s = r.a("s"), &out = r.a("out");
  for (uint32_t t = 0; t < r.blockX; ++t) {
    const uint64_t x = pairAt(a, t), y = pairAt(b, t);
    const unsigned n = static_cast<uint32_t>(s[t]) & 63;
    const auto sx = static_cast<int64_t>(x), sy = static_cast<int64_t>(y);
    uint64_t res[7];
    res[0] = (x << n) | (x >> ((64 - n) & 63));
    res[1] = sx < sy ? 1 : 0;
    res[2] = x < y ? 1 : 0;
    res[3] = static_cast<uint64_t>(sx < sy ? sx : sy) + (x > y ? x : y);
    res[4] = 0 - x;
    res[5] = static_cast<uint64_t>((static_cast<unsigned __int128>(x) * y) >> 64);
    res[6] = static_cast<uint64_t>(sx >> n);  // arithmetic in C++20
    for (uint32_t k = 0; k < 7; ++k) setPair(out, 7 * t + k, res[k]);
  }
}

void shortDiv(RefArgs& r) {
  auto &num = r.a("num"), &den = r.a("den"), &quo = r.a("quo"), &rem = r.a("rem"), &uq = r.a("uq"),
       &mix = r.a("mix");
  for (uint32_t t = 0; t < r.blockX; ++t) {
    const auto p = static_cast<int16_t>(getPacked(num, t, 16)), q = static_cast<int16_t>(getPacked(den, t, 16));
    const int32_t pi = p, qi = q;  // promoted to int, as in C: -32768 / -1 = 32768
    setPacked(quo, t, 16, static_cast<uint32_t>(pi / qi));
    setPacked(rem, t, 16, static_cast<uint32_t>(pi % qi));
    const uint32_t up = static_cast<uint16_t>(p), uqv = static_cast<uint16_t>(q);
    setPacked(uq, t, 16, up / uqv + up % uqv);
    mix[t] = static_cast<int8_t>(p) * 3 + static_cast<uint8_t>(q);
  }
}

void charArgs(RefArgs& r) {
  auto &in = r.a("in"), &out = r.a("out");
  for (uint32_t t = 0; t < r.blockX; ++t) {
    const int32_t v = in[t];
    const auto c = static_cast<int8_t>(v);
    const auto h = static_cast<uint16_t>(v);
    const auto k = static_cast<uint32_t>(v) + 1;
    const uint64_t res = static_cast<uint64_t>(static_cast<int64_t>(c) * h) - (static_cast<uint64_t>(k) << 20);
    setPair(out, t, res);
  }
}

void u64SumSquares(RefArgs& r) {
  auto &x = r.a("x"), &bias = r.a("bias"), &partial = r.a("partial"), &total = r.a("total"), &bits = r.a("bits");
  const auto n = static_cast<uint32_t>(r.s("n"));
  uint64_t sum = 0, mask = 0;
  for (uint32_t i = 0; i < r.threads() && i < n; ++i) {
    const int64_t v = x[i];
    const int64_t sq = v * v * 1000003;  // |v| <= 2^20: below 2^60
    setPair(partial, i, static_cast<uint64_t>(static_cast<int64_t>(pairAt(bias, i)) - sq + v));
    sum += static_cast<uint64_t>(sq);
    mask |= uint64_t{1} << ((i * 9) % 64);
  }
  setPair(total, 0, sum);
  setPair(bits, 0, mask);
}

}  // namespace

void addArithKernels(Table& t) {
  t["u64_sum_squares"] = u64SumSquares;
  t["int64_ops"] = int64Ops;
  t["short_div"] = shortDiv;
  t["char_args"] = charArgs;
}

}  // namespace qgpu::kernels::ref
