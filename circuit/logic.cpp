// qgpu/circuit/logic.cpp — see logic.h for the maths.
#include "circuit/logic.h"

#include <algorithm>
#include <cmath>
#include <string>
#include <utility>

#include "circuit/unit_builder.h"

namespace qgpu::circuit {
namespace {

using unit_builder::Builder;
using unit_builder::Down;
using unit_builder::Lin;
using unit_builder::sgn;
using unit_builder::usage;

// Pattern detector over k sign bits: N = Σ s_i(p)·x̂_i − (k − 1).
Lin pattern(const Field& in, uint32_t p) {
  Lin n;
  for (int i = 0; i < in.dims; ++i) n.terms.push_back({in.at(i), sgn((p >> i) & 1)});
  n.constant = -(in.dims - 1);
  return n;
}

Status checkNibbleOperands(const std::string& g, const Field& a, const Field& b) {
  if (a.dims < 4 || a.dims > 32 || a.dims % 4 != 0 || b.dims != a.dims)
    return usage(g, "operands need equal widths, a multiple of 4 between 4 and 32 bits");
  return Ok{};
}

// Level 1 of the adder and the comparator: for nibble j the bit weights of T (in units of x̂,
// a bit a_i = (x̂ + 1)/2, so 2^i·a_i = 2^(i−1)·x̂ + 2^(i−1)), with b optionally inverted (a
// flipped bit has x̂ → −x̂) and bit `flipTop` of both operands flipped (signed compare).
struct NibbleSum {
  Lin t;  // T_k = Σ_{i≤k} 2^i (a_i + b'_i), constant part included
};
Lin nibbleSum(const Field& a, const Field& b, int nibble, int upToBit, bool invertB,
              bool flipTopA, bool flipTopB) {
  Lin t;
  const int top = a.dims - 1;
  for (int k = 0; k <= upToBit; ++k) {
    const int i = 4 * nibble + k;
    const double half = std::ldexp(1.0, k - 1);
    const double sa = (flipTopA && i == top) ? -1 : 1;
    const double sb = (invertB ? -1 : 1) * ((flipTopB && i == top) ? -1 : 1);
    t.terms.push_back({a.at(i), sa * half});
    t.terms.push_back({b.at(i), sb * half});
    t.constant += 2 * half;
  }
  return t;
}

// G_j, P_j of nibble j as clean sign bits at bus dims (g, p): step pairs on T_3 ≥ 16, ≥ 15.
Status generatePropagate(Builder& bld, const Lin& t3, int gDim, int pDim) {
  const Term up{bld.ctx().ballast.at(0), 1.0f};
  QGPU_CHECK(bld.step(t3.shifted(-16 + 1), {up}, {{gDim, 2}}, false));
  QGPU_CHECK(bld.step(t3.shifted(-15 + 1), {up}, {{pDim, 2}}, false));
  return Ok{};
}

// Carry into nibble j from the bus: T = Σ_{m<j} 2^m (G_m + P_m) + cin, as a Lin in x̂ of the bus
// dims (G_m = (ĝ + 1)/2); `cinDim` < 0 uses the constant `carryIn`.
Lin carryInto(int j, const std::vector<int>& gDims, const std::vector<int>& pDims, int cinDim,
              bool carryIn) {
  Lin t;
  for (int m = 0; m < j; ++m) {
    const double half = std::ldexp(1.0, m - 1);
    t.terms.push_back({gDims[static_cast<size_t>(m)], half});
    t.terms.push_back({pDims[static_cast<size_t>(m)], half});
    t.constant += 2 * half;
  }
  if (cinDim >= 0) {
    t.terms.push_back({cinDim, 0.5});
    t.constant += 0.5;
  } else if (carryIn) {
    t.constant += 1;
  }
  return t;
}

}  // namespace

GadgetReport& GadgetReport::operator+=(const GadgetReport& o) {
  onMin = units == 0 ? o.onMin : o.units == 0 ? onMin : std::min(onMin, o.onMin);
  offMax = units == 0 ? o.offMax : o.units == 0 ? offMax : std::max(offMax, o.offMax);
  units += o.units;
  return *this;
}

Expected<GadgetReport> buildDecode(UnitWriter& units, const DecodeSpec& s, const MlpContext& ctx) {
  Builder b(units, ctx, "decode");
  QGPU_CHECK(b.check());
  const int k = s.in.dims;
  if (k < 1 || k > 8 || s.out.dims != (1 << k))
    return usage("decode", "needs 1..8 input bits and 2^k output dims");
  QGPU_CHECK(b.prior(s.prior, s.out));
  std::vector<Down> all;
  for (int p = 0; p < (1 << k); ++p) all.push_back({s.out.at(p), -1});
  QGPU_CHECK(b.constant(all));
  for (int p = 0; p < (1 << k); ++p)
    QGPU_CHECK(b.detector(pattern(s.in, static_cast<uint32_t>(p)), {{s.out.at(p), 2}}));
  return b.report();
}

Expected<GadgetReport> buildLookup(UnitWriter& units, const LookupSpec& s, const MlpContext& ctx) {
  Builder b(units, ctx, "lookup");
  QGPU_CHECK(b.check());
  const int k = s.in.dims, m = s.out.dims;
  if (k < 1 || k > 8) return usage("lookup", "needs 1..8 input bits");
  if (m < 1 || m > 32) return usage("lookup", "needs 1..32 output bits");
  if (s.table.size() != (size_t{1} << k))
    return usage("lookup", "the table has " + std::to_string(s.table.size()) +
                               " words, the input field needs " + std::to_string(1 << k));
  QGPU_CHECK(b.prior(s.prior, s.out));
  for (uint32_t p = 0; p < (1u << k); ++p) {
    std::vector<Down> word;
    for (int j = 0; j < m; ++j) word.push_back({s.out.at(j), sgn((s.table[p] >> j) & 1)});
    QGPU_CHECK(b.detector(pattern(s.in, p), word));
  }
  return b.report();
}

Expected<GadgetReport> buildRequantise(UnitWriter& units, const RequantiseSpec& s,
                                       const MlpContext& ctx) {
  Builder b(units, ctx, "requantise");
  QGPU_CHECK(b.check());
  const int V = s.in.dims;
  if (V < 1 || V > 32 || s.out.dims != V)
    return usage("requantise", "needs 1..32 input dims and as many output dims");
  if (!(s.magnitude > 0)) return usage("requantise", "the input magnitude must be positive");
  if (s.lambdaEmpty < 0) return usage("requantise", "lambdaEmpty must be 0 or positive");
  const double y = s.magnitude / ctx.unit;
  double k = 1;
  while (k * y < 2) k *= 2;
  while (k * y >= 4 && k > std::ldexp(1.0, -20)) k /= 2;
  QGPU_CHECK(b.prior(s.prior, s.out));
  const bool empty = s.lambdaEmpty > 0;
  std::vector<Term> emptyCancel;  // on present tokens (λ): −emptyValue as scaled by λ_e
  if (empty) {
    std::vector<Term> emptyWrite;
    for (int j = 0; j < V; ++j) {
      const double e = sgn((s.emptyValue >> j) & 1);
      emptyWrite.push_back({s.out.at(j), b.weightAt(e, s.lambdaEmpty)});
      emptyCancel.push_back({s.out.at(j), b.weightAt(-e, s.lambdaEmpty)});
    }
    QGPU_CHECK(b.linearRaw({b.ballastUp()}, emptyWrite));
  }
  for (int j = 0; j < V; ++j)
    for (double side : {1.0, -1.0}) {
      Lin n;
      n.terms.push_back({s.in.at(j), side * k});
      n.constant = -(k * y - 1);
      std::vector<Term> down = b.downs({{s.out.at(j), side}});
      if (j == 0) down.insert(down.end(), emptyCancel.begin(), emptyCancel.end());
      QGPU_CHECK(b.detectorRaw(n, down));
    }
  return b.report();
}

int adderBusDims(int bits) {
  return bits / 4 * 10;
}

Expected<GadgetReport> buildAdder(UnitWriter& level1, const MlpContext& ctx1, UnitWriter& level2,
                                  const MlpContext& ctx2, const AdderSpec& s) {
  Builder b1(level1, ctx1, "adder level 1"), b2(level2, ctx2, "adder level 2");
  QGPU_CHECK(b1.check());
  QGPU_CHECK(b2.check());
  QGPU_CHECK(checkNibbleOperands("adder", s.a, s.b));
  const int n = s.a.dims, nibbles = n / 4;
  if (s.bus.dims != adderBusDims(n) || s.out.dims != n || s.cin.dims > 1 || s.cout.dims > 1)
    return usage("adder", "needs a bus of 10 dims per nibble, n output dims, 0/1 cin and cout");
  // Bus layout per nibble j (offset 10j): S⁰ bits 0..3, S¹ bits 0..3, G, P.
  auto s0 = [&](int j, int k) { return s.bus.at(10 * j + k); };
  auto s1 = [&](int j, int k) { return s.bus.at(10 * j + 4 + k); };
  std::vector<int> gDims, pDims;
  for (int j = 0; j < nibbles; ++j) {
    gDims.push_back(s.bus.at(10 * j + 8));
    pDims.push_back(s.bus.at(10 * j + 9));
  }
  // Level 1.
  QGPU_CHECK(b1.prior(s.busPrior, s.bus));
  std::vector<Down> minusAll;
  for (int i = 0; i < s.bus.dims; ++i) minusAll.push_back({s.bus.at(i), -1});
  QGPU_CHECK(b1.constant(minusAll));
  const Term up1{ctx1.ballast.at(0), 1.0f};
  for (int j = 0; j < nibbles; ++j) {
    for (int k = 0; k < 4; ++k) {
      const Lin t = nibbleSum(s.a, s.b, j, k, s.invertB, false, false);
      for (int c = 0; c < 2; ++c) {
        const int dim = c == 0 ? s0(j, k) : s1(j, k);
        const double base = std::ldexp(1.0, k);
        // bit k of T + c = [≥ 2^k] − [≥ 2^(k+1)] + [≥ 3·2^k]; each step adds ±2u.
        const double thresholds[3] = {base, 2 * base, 3 * base};
        const double signs[3] = {2, -2, 2};
        for (int q = 0; q < 3; ++q)
          QGPU_CHECK(b1.step(t.shifted(c - thresholds[q] + 1), {up1}, {{dim, signs[q]}}, false));
      }
    }
    const Lin t3 = nibbleSum(s.a, s.b, j, 3, s.invertB, false, false);
    QGPU_CHECK(generatePropagate(b1, t3, gDims[static_cast<size_t>(j)],
                                 pDims[static_cast<size_t>(j)]));
  }
  // Level 2.
  QGPU_CHECK(b2.prior(s.outPrior, s.out));
  if (s.cout.dims == 1) QGPU_CHECK(b2.prior(s.outPrior, s.cout));
  const int cinDim = s.cin.dims == 1 ? s.cin.at(0) : -1;
  for (int j = 0; j < nibbles; ++j) {
    const Lin carry = carryInto(j, gDims, pDims, cinDim, s.carryIn);
    const Lin n = carry.shifted(-std::ldexp(1.0, j) + 1);
    for (int k = 0; k < 4; ++k) {
      const int outDim = s.out.at(4 * j + k);
      // out = S⁰ + c_j·(S¹ − S⁰)
      QGPU_CHECK(b2.linear({{s0(j, k), 1.0f}}, {{outDim, 1}}));
      QGPU_CHECK(b2.step(n, {{s1(j, k), 1.0f}, {s0(j, k), -1.0f}}, {{outDim, 1}}, s.unclamped));
    }
  }
  if (s.cout.dims == 1) {
    const Lin carry = carryInto(nibbles, gDims, pDims, cinDim, s.carryIn);
    QGPU_CHECK(b2.constant({{s.cout.at(0), -1}}));
    QGPU_CHECK(b2.step(carry.shifted(-std::ldexp(1.0, nibbles) + 1), {{ctx2.ballast.at(0), 1.0f}},
                       {{s.cout.at(0), 2}}, s.unclamped));
  }
  GadgetReport r = b1.report();
  r += b2.report();
  return r;
}

const char* compareOpName(CompareOp op) {
  switch (op) {
    case CompareOp::Eq: return "eq";
    case CompareOp::Ne: return "ne";
    case CompareOp::LtU: return "lt.u";
    case CompareOp::LeU: return "le.u";
    case CompareOp::LtS: return "lt.s";
    case CompareOp::LeS: return "le.s";
  }
  return "?";
}

int compareBusDims(int bits) {
  return bits / 4 * 2;
}

bool isSignedCompare(CompareOp op) { return op == CompareOp::LtS || op == CompareOp::LeS; }

Status shareLevel1(CompareSpec& s, const Field& bus, const Field& top) {
  if (top.dims != 2)
    return usage("compare", "a shared level 1 needs a top field of 2 dims (the top nibble's G, P)");
  const bool isSigned = isSignedCompare(s.op);
  s.bus = isSigned ? bus.slice(0, bus.dims - top.dims, "below the top") : bus;
  s.top = isSigned ? top : Field{};
  s.busWritten = s.op != CompareOp::Eq;
  s.topWritten = s.op != CompareOp::LtS;
  return Ok{};
}

Expected<GadgetReport> buildCompare(UnitWriter& level1, const MlpContext& ctx1,
                                    UnitWriter& level2, const MlpContext& ctx2,
                                    const CompareSpec& s) {
  Builder b1(level1, ctx1, "compare level 1"), b2(level2, ctx2, "compare level 2");
  QGPU_CHECK(b1.check());
  QGPU_CHECK(b2.check());
  QGPU_CHECK(checkNibbleOperands("compare", s.a, s.b));
  const int n = s.a.dims, nibbles = n / 4;
  const bool ownTop = s.top.dims > 0;
  if (s.top.dims != 0 && s.top.dims != 2)
    return usage("compare", "takes a top field of 0 or 2 dims (the top nibble's G, P)");
  if (s.bus.dims != compareBusDims(n) - (ownTop ? 2 : 0) || s.out.dims != 1)
    return usage("compare",
                 "needs a bus of 2 dims per nibble (without the top's when it has a "
                 "top field) and 1 output dim");
  const bool isSigned = isSignedCompare(s.op);
  std::vector<int> gDims, pDims;
  for (int j = 0; j < nibbles; ++j) {
    const bool inTop = ownTop && j == nibbles - 1;
    gDims.push_back(inTop ? s.top.at(0) : s.bus.at(2 * j));
    pDims.push_back(inTop ? s.top.at(1) : s.bus.at(2 * j + 1));
  }
  // Level 1: G/P of a' + ~b' (a' = a ^ msb, ~b' = ~b ^ msb when signed), for the nibbles whose
  // dims no other compare wrote.
  const bool busHere = !s.busWritten, topHere = ownTop ? !s.topWritten : busHere;
  std::vector<Down> minusAll;
  if (busHere) {
    QGPU_CHECK(b1.prior(s.busPrior, s.bus));
    for (int i = 0; i < s.bus.dims; ++i) minusAll.push_back({s.bus.at(i), -1});
  }
  if (ownTop && topHere) {
    QGPU_CHECK(b1.prior(s.busPrior, s.top));
    for (int i = 0; i < s.top.dims; ++i) minusAll.push_back({s.top.at(i), -1});
  }
  if (!minusAll.empty()) QGPU_CHECK(b1.constant(minusAll));
  for (int j = 0; j < nibbles; ++j) {
    if (!(j == nibbles - 1 ? topHere : busHere)) continue;
    const Lin t3 = nibbleSum(s.a, s.b, j, 3, /*invertB=*/true, isSigned, isSigned);
    QGPU_CHECK(
        generatePropagate(b1, t3, gDims[static_cast<size_t>(j)], pDims[static_cast<size_t>(j)]));
  }
  // Level 2.
  QGPU_CHECK(b2.prior(s.outPrior, s.out));
  const int out = s.out.at(0);
  if (s.op == CompareOp::Eq || s.op == CompareOp::Ne) {
    // every nibble propagate-only: Σ (p − g)/2 = nibbles.
    Lin all;
    for (int j = 0; j < nibbles; ++j) {
      all.terms.push_back({pDims[static_cast<size_t>(j)], 0.5});
      all.terms.push_back({gDims[static_cast<size_t>(j)], -0.5});
    }
    all.constant = -(nibbles - 1);
    const double sign = s.op == CompareOp::Eq ? 1 : -1;
    QGPU_CHECK(b2.constant({{out, -sign}}));
    QGPU_CHECK(b2.detector(all, {{out, 2 * sign}}));
  } else {
    const bool strict = s.op == CompareOp::LtU || s.op == CompareOp::LtS;
    // lt = no carry out of a' + ~b' + 1, le = none out of a' + ~b'; out = +u − 2u·carry.
    const Lin carry = carryInto(nibbles, gDims, pDims, -1, strict);
    QGPU_CHECK(b2.constant({{out, 1}}));
    QGPU_CHECK(b2.step(carry.shifted(-std::ldexp(1.0, nibbles) + 1), {{ctx2.ballast.at(0), 1.0f}},
                       {{out, -2}}, s.unclamped));
  }
  GadgetReport r = b1.report();
  r += b2.report();
  return r;
}

Expected<GadgetReport> buildMux(UnitWriter& units, const MuxSpec& s, const MlpContext& ctx) {
  Builder b(units, ctx, "mux");
  QGPU_CHECK(b.check());
  const int n = static_cast<int>(s.inputs.size()), m = s.out.dims;
  if (n < 1 || m < 1) return usage("mux", "needs at least one input field and one output dim");
  for (const Field& f : s.inputs)
    if (f.dims != m) return usage("mux", "input field " + f.name + " is not as wide as the output");
  if (s.selector == Selector::OneHot && s.select.dims != n)
    return usage("mux", "a one-hot selector needs one dim per input");
  if (s.selector == Selector::Binary &&
      (s.select.dims < 1 || s.select.dims > 8 || n > (1 << s.select.dims)))
    return usage("mux", "a binary selector needs 1..8 dims and at most 2^k inputs");
  QGPU_CHECK(b.prior(s.prior, s.out));
  for (int i = 0; i < n; ++i) {
    Lin sel;
    if (s.selector == Selector::OneHot)
      sel.terms.push_back({s.select.at(i), 1});
    else
      sel = pattern(s.select, static_cast<uint32_t>(i));
    QGPU_TRY(g, b.gate(sel));
    for (int j = 0; j < m; ++j) {
      QGPU_TRY(index, units.add({g, {{s.inputs[static_cast<size_t>(i)].at(j), 1.0f}},
                                 {{s.out.at(j), b.weight(1)}}}));
      (void)index;
    }
  }
  GadgetReport r = b.report();
  r.units += n * m;
  return r;
}

Expected<GadgetReport> buildCancel(UnitWriter& units, const Field& field, const MlpContext& ctx) {
  Builder b(units, ctx, "cancel");
  QGPU_CHECK(b.check());
  QGPU_CHECK(b.cancel(field));
  return b.report();
}

Expected<GadgetReport> buildPad(UnitWriter& units, const Field& field, const MlpContext& ctx) {
  Builder b(units, ctx, "pad");
  QGPU_CHECK(b.check());
  for (int i = 0; i < field.dims; ++i)
    QGPU_CHECK(b.linear({b.ballastUp(), {field.at(i), -1.0f}}, {{field.at(i), 1}}));
  return b.report();
}

namespace {
Lin toLin(const LinearForm& n) {
  Lin l;
  l.terms = n.terms;
  l.constant = n.constant;
  return l;
}
std::vector<Down> toDowns(const std::vector<Output>& out) {
  std::vector<Down> ds;
  for (const Output& o : out) ds.push_back({o.dim, o.d});
  return ds;
}
}  // namespace

Expected<GadgetReport> addDetector(UnitWriter& units, const MlpContext& ctx, const LinearForm& n,
                                   const std::vector<Term>& up, const std::vector<Output>& out) {
  Builder b(units, ctx, "detector");
  QGPU_CHECK(b.check());
  QGPU_TRY(g, b.gate(toLin(n)));
  QGPU_TRY(index, units.add({g, up, b.downs(toDowns(out))}));
  (void)index;
  GadgetReport r = b.report();
  r.units = 1;
  return r;
}

Expected<GadgetReport> addStep(UnitWriter& units, const MlpContext& ctx, const LinearForm& n,
                               const std::vector<Term>& up, const std::vector<Output>& out) {
  Builder b(units, ctx, "step");
  QGPU_CHECK(b.check());
  QGPU_CHECK(b.step(toLin(n), up, toDowns(out), false));
  return b.report();
}

Expected<GadgetReport> addConstant(UnitWriter& units, const MlpContext& ctx,
                                   const std::vector<Output>& out) {
  Builder b(units, ctx, "constant");
  QGPU_CHECK(b.check());
  QGPU_CHECK(b.constant(toDowns(out)));
  return b.report();
}

}  // namespace qgpu::circuit
