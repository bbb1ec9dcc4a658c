// qgpu/circuit/alu_bits.cpp — see alu_bits.h for the maths; the units come from
// circuit/unit_builder.h, as logic.cpp's do.
#include "circuit/alu_bits.h"

#include <algorithm>
#include <cmath>
#include <string>
#include <utility>
#include <vector>

#include "circuit/unit_builder.h"

namespace qgpu::circuit {
namespace {

using unit_builder::Builder;
using unit_builder::Down;
using unit_builder::Lin;
using unit_builder::sgn;
using unit_builder::usage;

// Every dim of f, each with d.
std::vector<Down> all(const Field& f, double d) {
  std::vector<Down> out;
  for (int i = 0; i < f.dims; ++i) out.push_back({f.at(i), d});
  return out;
}

// The ±u word of value v on the dims of f.
std::vector<Down> word(const Field& f, uint64_t v) {
  std::vector<Down> out;
  for (int i = 0; i < f.dims; ++i) out.push_back({f.at(i), sgn((v >> i) & 1)});
  return out;
}

// T = Σ_{k<5} 2^k bit_k + 32·Σ_{5≤k<8} bit_k of an 8-bit field (in x̂: bit = (x̂ + 1)/2): equal to
// the value while it is < 32, ≥ 32 otherwise; at most 127.
void addSaturating8(Lin& t, const Field& f) {
  for (int k = 0; k < 8; ++k) {
    const double w = k < 5 ? std::ldexp(1.0, k) : 32.0;
    t.add(f.at(k), w / 2);
    t.constant += w / 2;
  }
}

Status checkWidth(const std::string& g, const Field& f, const char* what, int lo, int hi) {
  if (f.dims < lo || f.dims > hi)
    return usage(g, std::string(what) + " needs " + std::to_string(lo) +
                        (lo == hi ? "" : ".." + std::to_string(hi)) + " dims, has " +
                        std::to_string(f.dims));
  return Ok{};
}

// The shifter's units into an existing builder (bfe's level 1 reuses it).
Status shiftUnits(Builder& bld, const ShiftSpec& s) {
  const std::string g = "shift";
  QGPU_CHECK(checkWidth(g, s.main, "main", 32, 32));
  QGPU_CHECK(checkWidth(g, s.out, "out", 32, 32));
  if (s.fillKind == ShiftFill::Field) QGPU_CHECK(checkWidth(g, s.fill, "fill", 32, 32));
  else if (s.fill.dims != 0) return usage(g, "a zero or sign fill takes no fill field");
  if (s.rule == ShiftAmount::Clamp) {
    QGPU_CHECK(checkWidth(g, s.amount, "a clamped amount", 5, 32));
    if (s.fillKind == ShiftFill::Field)
      return usage(g, "a clamped amount (k ≥ 32 → all fill) needs a zero or sign fill");
  } else if (s.amount.dims < 5) {
    return usage(g, "a wrapped amount needs at least 5 dims");
  }
  const int high = s.rule == ShiftAmount::Clamp ? s.amount.dims - 5 : 0;
  QGPU_CHECK(bld.prior(s.prior, s.out));
  const int sign = s.main.at(31);
  for (int k = 0; k < 32; ++k) {
    Lin dk;  // AND(low 5 bits = k, every high bit 0)
    for (int i = 0; i < 5; ++i) dk.add(s.amount.at(i), sgn((k >> i) & 1));
    for (int i = 0; i < high; ++i) dk.add(s.amount.at(5 + i), -1);
    dk.constant = -(5 + high - 1);
    for (int j = 0; j < 32; ++j) {
      const int src = s.dir == ShiftDir::Left ? j - k : j + k;
      const int out = s.out.at(j);
      if (src >= 0 && src < 32) {
        QGPU_CHECK(bld.unit(dk, {{s.main.at(src), 1.0f}}, {{out, 1}}));
      } else if (s.fillKind == ShiftFill::Field) {
        const int f = s.dir == ShiftDir::Left ? 32 + src : src - 32;
        QGPU_CHECK(bld.unit(dk, {{s.fill.at(f), 1.0f}}, {{out, 1}}));
      } else if (s.fillKind == ShiftFill::Sign) {
        QGPU_CHECK(bld.unit(dk, {{sign, 1.0f}}, {{out, 1}}));
      } else {
        QGPU_CHECK(bld.detector(dk, {{out, -1}}));
      }
    }
  }
  if (high > 0) {
    Lin big;  // N = Σ_{i≥5} bit_i − 1 + 1
    for (int i = 0; i < high; ++i) big.add(s.amount.at(5 + i), 0.5);
    big.constant = 0.5 * high;
    if (s.fillKind == ShiftFill::Sign)
      QGPU_CHECK(bld.step(big, {{sign, 1.0f}}, all(s.out, 1)));
    else
      QGPU_CHECK(bld.step(big, {bld.ballastUp()}, all(s.out, -1)));
  }
  return Ok{};
}

}  // namespace

const char* bitwiseOpName(BitwiseOp op) {
  switch (op) {
    case BitwiseOp::And: return "and";
    case BitwiseOp::Or: return "or";
    case BitwiseOp::Xor: return "xor";
    case BitwiseOp::Not: return "not";
  }
  return "?";
}

Expected<GadgetReport> buildBitwise(UnitWriter& units, const BitwiseSpec& s,
                                    const MlpContext& ctx) {
  const std::string g = std::string("bitwise ") + bitwiseOpName(s.op);
  Builder b(units, ctx, g);
  QGPU_CHECK(b.check());
  const int n = s.a.dims;
  QGPU_CHECK(checkWidth(g, s.a, "a", 1, 32));
  QGPU_CHECK(checkWidth(g, s.out, "out", n, n));
  QGPU_CHECK(checkWidth(g, s.b, "b", s.op == BitwiseOp::Not ? 0 : n, s.op == BitwiseOp::Not ? 0 : n));
  QGPU_CHECK(b.prior(s.prior, s.out));
  switch (s.op) {
    case BitwiseOp::Not:
      for (int j = 0; j < n; ++j) QGPU_CHECK(b.linear({{s.a.at(j), 1.0f}}, {{s.out.at(j), -1}}));
      break;
    case BitwiseOp::And:
    case BitwiseOp::Or: {
      const double side = s.op == BitwiseOp::And ? 1 : -1;  // or: detect ¬a ∧ ¬b
      QGPU_CHECK(b.constant(all(s.out, -side)));
      for (int j = 0; j < n; ++j) {
        Lin both;
        both.add(s.a.at(j), side).add(s.b.at(j), side).constant = -1;
        QGPU_CHECK(b.detector(both, {{s.out.at(j), 2 * side}}));
      }
      break;
    }
    case BitwiseOp::Xor:
      for (int j = 0; j < n; ++j)
        for (double side : {1.0, -1.0}) {  // a = 1: −b; a = 0: +b
          Lin a;
          a.add(s.a.at(j), side);
          QGPU_CHECK(b.unit(a, {{s.b.at(j), 1.0f}}, {{s.out.at(j), -side}}));
        }
      break;
  }
  return b.report();
}

std::optional<ShiftSpec> shiftSpecFor(machine::Op op, const Field& a, const Field& b,
                                      const Field& c, const Field& out, Prior prior) {
  ShiftSpec s;
  s.out = out;
  s.prior = prior;
  switch (op) {
    case machine::Op::Shl:
    case machine::Op::ShrU:
    case machine::Op::ShrS:
      s.dir = op == machine::Op::Shl ? ShiftDir::Left : ShiftDir::Right;
      s.main = a;
      s.fillKind = op == machine::Op::ShrS ? ShiftFill::Sign : ShiftFill::Zero;
      s.rule = ShiftAmount::Clamp;
      s.amount = b;
      return s;
    case machine::Op::ShfLW:  // high word of ({b, a} << k): b's bits, a's top bits shift in
      s.dir = ShiftDir::Left;
      s.main = b;
      s.fill = a;
      break;
    case machine::Op::ShfRW:  // low word of ({b, a} >> k): a's bits, b's low bits shift in
      s.dir = ShiftDir::Right;
      s.main = a;
      s.fill = b;
      break;
    default: return std::nullopt;
  }
  s.fillKind = ShiftFill::Field;
  s.rule = ShiftAmount::Wrap;
  s.amount = c;
  return s;
}

Expected<GadgetReport> buildShift(UnitWriter& units, const ShiftSpec& s, const MlpContext& ctx) {
  Builder b(units, ctx, "shift");
  QGPU_CHECK(b.check());
  QGPU_CHECK(shiftUnits(b, s));
  return b.report();
}

Expected<GadgetReport> buildShiftPrep(UnitWriter& units, const ShiftPrepSpec& s,
                                      const MlpContext& ctx) {
  const std::string g = "shift prep";
  Builder bld(units, ctx, g);
  QGPU_CHECK(bld.check());
  QGPU_CHECK(checkWidth(g, s.op, "the opcode one-hot", 5, 5));
  for (const Field* f : {&s.a, &s.b, &s.c, &s.hi, &s.lo}) QGPU_CHECK(checkWidth(g, *f, "a word", 32, 32));
  QGPU_CHECK(checkWidth(g, s.start, "start", 33, 33));
  if (s.bfe.dims != 0 && s.bfe.dims != 2)
    return usage(g, "the bfe one-hot needs 0 or 2 dims, has " + std::to_string(s.bfe.dims));
  QGPU_CHECK(bld.prior(s.prior, s.hi));
  QGPU_CHECK(bld.prior(s.prior, s.lo));
  QGPU_CHECK(bld.prior(s.prior, s.start));
  const int shl = s.op.at(0), shrU = s.op.at(1), shrS = s.op.at(2), shfL = s.op.at(3),
            shfR = s.op.at(4);
  const Term one = bld.ballastUp();
  std::vector<Down> consts = all(s.hi, -1);
  for (const Down& d : all(s.lo, -1)) consts.push_back(d);
  for (const Down& d : all(s.start, -1)) consts.push_back(d);
  QGPU_CHECK(bld.constant(consts));
  // hi and lo: (x̂ + 1)u added where the opcode selects that source.
  Lin isShl, isShrS, isShf, notShl;
  isShl.add(shl, 1);
  isShrS.add(shrS, 1);
  isShf.add(shfL, 1).add(shfR, 1).constant = 1;
  notShl.add(shl, -1);
  QGPU_CHECK(bld.unit(isShrS, {{s.a.at(31), 1.0f}, one}, all(s.hi, 1)));
  for (int j = 0; j < 32; ++j) {
    QGPU_CHECK(bld.unit(isShl, {{s.a.at(j), 1.0f}, one}, {{s.hi.at(j), 1}}));
    QGPU_CHECK(bld.unit(isShf, {{s.b.at(j), 1.0f}, one}, {{s.hi.at(j), 1}}));
    QGPU_CHECK(bld.unit(notShl, {{s.a.at(j), 1.0f}, one}, {{s.lo.at(j), 1}}));
  }
  // start: +2u on s for each (op, amount) detector.
  struct Group {
    Lin op;       // +1 iff the group's op is set (N contribution), −1 otherwise
    Field amount;
    bool clamp;   // every high bit 0 is part of the detector; k ≥ 32 has its own pair
    bool left;    // s = 32 − k (left) or k (right)
    int high = 27;  // clamp: the amount's bits above bit 4 that are read (bfe: 3, b & 0xff)
  };
  Lin either, isShfL, isShfR;  // shr.u or shr.s; shf.l; shf.r
  either.add(shrU, 1).add(shrS, 1).constant = 1;
  isShfL.add(shfL, 1);
  isShfR.add(shfR, 1);
  std::vector<Group> groups = {{isShl, s.b, true, true},
                               {either, s.b, true, false},
                               {isShfL, s.c, false, true},
                               {isShfR, s.c, false, false}};
  if (s.bfe.dims == 2) {
    Lin isBfe;  // bfe.u or bfe.s: W = {0, a} (hi stays 0, lo is a), s = min(b & 0xff, 32)
    isBfe.add(s.bfe.at(0), 1).add(s.bfe.at(1), 1).constant = 1;
    groups.push_back({isBfe, s.b, true, false, 3});
  }
  for (const Group& gr : groups) {
    const int high = gr.clamp ? gr.high : 0;
    for (int k = 0; k < 32; ++k) {
      Lin d = gr.op;
      for (int i = 0; i < 5; ++i) d.add(gr.amount.at(i), sgn((k >> i) & 1));
      for (int i = 0; i < high; ++i) d.add(gr.amount.at(5 + i), -1);
      d.constant += -(5 + high);  // the op term is ±1: N = 1 only with every literal matching
      QGPU_CHECK(bld.detector(d, {{s.start.at(gr.left ? 32 - k : k), 2}}));
    }
    if (gr.clamp) {
      // [Σ_{i≥5} b_i + 32·[op] ≥ 33]: the op's bit is (N_op + 1)/2.
      Lin t;
      for (int i = 0; i < high; ++i) t.add(gr.amount.at(5 + i), 0.5);
      t.constant = 0.5 * high;
      for (const auto& [dim, coef] : gr.op.terms) t.add(dim, 16 * coef);
      t.constant += 16 * (gr.op.constant + 1);
      QGPU_CHECK(bld.step(t.shifted(-33 + 1), {one}, {{s.start.at(gr.left ? 0 : 32), 2}}));
    }
  }
  return bld.report();
}

Expected<GadgetReport> buildWindow(UnitWriter& units, const WindowSpec& s, const MlpContext& ctx) {
  const std::string g = "window";
  Builder bld(units, ctx, g);
  QGPU_CHECK(bld.check());
  QGPU_CHECK(checkWidth(g, s.lo, "lo", 32, 32));
  QGPU_CHECK(checkWidth(g, s.hi, "hi", 32, 32));
  QGPU_CHECK(checkWidth(g, s.start, "start", 33, 33));
  QGPU_CHECK(checkWidth(g, s.out, "out", 32, 32));
  QGPU_CHECK(bld.prior(s.prior, s.out));
  QGPU_CHECK(bld.constant(all(s.out, -1)));
  for (int st = 0; st <= 32; ++st) {
    Lin hot;
    hot.add(s.start.at(st), 1);
    for (int j = 0; j < 32; ++j) {
      const int i = j + st;
      const int src = i < 32 ? s.lo.at(i) : s.hi.at(i - 32);
      QGPU_CHECK(bld.unit(hot, {{src, 1.0f}, bld.ballastUp()}, {{s.out.at(j), 1}}));
    }
  }
  return bld.report();
}

Expected<GadgetReport> buildPopc(UnitWriter& units, const PopcSpec& s, const MlpContext& ctx) {
  const std::string g = "popc";
  Builder b(units, ctx, g);
  QGPU_CHECK(b.check());
  const int n = s.in.dims;
  QGPU_CHECK(checkWidth(g, s.in, "in", 1, 32));
  QGPU_CHECK(checkWidth(g, s.out, "out", static_cast<int>(std::floor(std::log2(n))) + 1, 32));
  QGPU_CHECK(b.prior(s.prior, s.out));
  QGPU_CHECK(b.constant(all(s.out, -1)));
  Lin t;  // T = Σ bit_i
  for (int i = 0; i < n; ++i) t.add(s.in.at(i), 0.5);
  t.constant = 0.5 * n;
  for (int theta = 1; theta <= n; ++theta) {
    std::vector<Down> change;
    for (int k = 0; k < s.out.dims && k < 6; ++k) {
      const int now = (theta >> k) & 1, before = ((theta - 1) >> k) & 1;
      if (now != before) change.push_back({s.out.at(k), 2.0 * (now - before)});
    }
    QGPU_CHECK(b.step(t.shifted(-theta + 1), {b.ballastUp()}, change));
  }
  return b.report();
}

Expected<GadgetReport> buildPriority(UnitWriter& units, const PrioritySpec& s,
                                     const MlpContext& ctx) {
  const std::string g = s.op == PriorityOp::Clz ? "clz" : "bfind.u";
  Builder b(units, ctx, g);
  QGPU_CHECK(b.check());
  const int n = s.in.dims;
  QGPU_CHECK(checkWidth(g, s.in, "in", 1, 32));
  const int need = s.op == PriorityOp::Clz ? static_cast<int>(std::floor(std::log2(n))) + 1
                                           : std::max(1, static_cast<int>(std::ceil(std::log2(n))));
  QGPU_CHECK(checkWidth(g, s.out, "out", need, 32));
  QGPU_CHECK(b.prior(s.prior, s.out));
  for (int p = n - 1; p >= 0; --p) {
    Lin first;  // bit p set, every bit above clear
    first.add(s.in.at(p), 1);
    for (int i = p + 1; i < n; ++i) first.add(s.in.at(i), -1);
    first.constant = -(n - 1 - p);
    const uint64_t v = s.op == PriorityOp::Clz ? static_cast<uint64_t>(n - 1 - p)
                                               : static_cast<uint64_t>(p);
    QGPU_CHECK(b.detector(first, word(s.out, v)));
  }
  Lin zero;
  for (int i = 0; i < n; ++i) zero.add(s.in.at(i), -1);
  zero.constant = -(n - 1);
  QGPU_CHECK(b.detector(zero, word(s.out, s.op == PriorityOp::Clz ? static_cast<uint64_t>(n)
                                                                  : ~uint64_t{0})));
  return b.report();
}

Expected<GadgetReport> buildBrev(UnitWriter& units, const BrevSpec& s, const MlpContext& ctx) {
  const std::string g = "brev";
  Builder b(units, ctx, g);
  QGPU_CHECK(b.check());
  const int n = s.in.dims;
  QGPU_CHECK(checkWidth(g, s.in, "in", 1, 32));
  QGPU_CHECK(checkWidth(g, s.out, "out", n, n));
  QGPU_CHECK(b.prior(s.prior, s.out));
  for (int j = 0; j < n; ++j) QGPU_CHECK(b.linear({{s.in.at(n - 1 - j), 1.0f}}, {{s.out.at(j), 1}}));
  return b.report();
}

int bfeBusDims(bool isSigned) {
  return 96 + (isSigned ? 1 : 0);
}

namespace {

Status checkBfe(const std::string& g, const BfeSpec& s, int busMax) {
  QGPU_CHECK(checkWidth(g, s.a, "a", 32, 32));
  QGPU_CHECK(checkWidth(g, s.b, "b", 8, 32));
  QGPU_CHECK(checkWidth(g, s.c, "c", 8, 32));
  QGPU_CHECK(checkWidth(g, s.bus, "the bus", bfeBusDims(s.isSigned), busMax));
  return checkWidth(g, s.out, "out", 32, 32);
}

Status bfeLevel1(Builder& b1, const BfeSpec& s) {
  auto m = [&](int i) { return s.bus.at(32 + i); };
  auto r = [&](int i) { return s.bus.at(64 + i); };
  const int f = s.isSigned ? s.bus.at(96) : -1;
  Field shField = s.bus;
  shField.dims = 32;
  Field pos = s.b, len = s.c;
  pos.dims = len.dims = 8;

  // Level 1. The shift writes (and, with Replace, cancels) sh; m, r, f are cancelled here.
  ShiftSpec shift;
  shift.dir = ShiftDir::Right;
  shift.main = s.a;
  shift.fillKind = ShiftFill::Zero;
  shift.rule = ShiftAmount::Clamp;
  shift.amount = pos;
  shift.out = shField;
  shift.prior = s.busPrior;
  if (!s.shiftOutside) QGPU_CHECK(shiftUnits(b1, shift));
  Field rest = s.bus;
  rest.offset += 32;
  rest.dims -= 32;
  QGPU_CHECK(b1.prior(s.busPrior, rest));
  Lin tLen, tPos;
  addSaturating8(tLen, len);
  addSaturating8(tPos, pos);
  std::vector<Down> consts;  // m starts at −u, r at +u, f at −u
  for (int i = 0; i < 32; ++i) {
    consts.push_back({m(i), -1});
    consts.push_back({r(i), 1});
  }
  if (s.isSigned) consts.push_back({f, -1});
  QGPU_CHECK(b1.constant(consts));
  for (int i = 0; i < 32; ++i) {
    QGPU_CHECK(b1.step(tLen.shifted(-(i + 1) + 1), {b1.ballastUp()}, {{m(i), 2}}));
    QGPU_CHECK(b1.step(tPos.shifted(-(32 - i) + 1), {b1.ballastUp()}, {{r(i), -2}}));
  }
  if (s.isSigned) {
    Lin both = tPos;  // T'' = T_pos + T_len
    both.terms.insert(both.terms.end(), tLen.terms.begin(), tLen.terms.end());
    both.constant += tLen.constant;
    for (int theta = 1; theta <= 32; ++theta) {
      // [T'' ≥ θ]·(y_{θ−1} − y_{θ−2}), y_k = x̂_{a_k} + 1, y_{−1} = 0
      std::vector<Term> up = {{s.a.at(theta - 1), 1.0f}};
      up.push_back(theta == 1 ? b1.ballastUp() : Term{s.a.at(theta - 2), -1.0f});
      QGPU_CHECK(b1.step(both.shifted(-theta + 1), up, {{f, 1}}));
    }
  }
  return Ok{};
}

Status bfeLevel2(Builder& b2, const BfeSpec& s) {
  auto sh = [&](int i) { return s.bus.at(i); };
  auto m = [&](int i) { return s.bus.at(32 + i); };
  auto r = [&](int i) { return s.bus.at(64 + i); };
  const int f = s.isSigned ? s.bus.at(96) : -1;
  QGPU_CHECK(b2.prior(s.outPrior, s.out));
  QGPU_CHECK(b2.constant(all(s.out, -1)));
  for (int i = 0; i < 32; ++i) {
    Lin keep;  // m_i ∧ r_i
    keep.add(m(i), 1).add(r(i), 1).constant = -1;
    QGPU_CHECK(b2.unit(keep, {{sh(i), 1.0f}, b2.ballastUp()}, {{s.out.at(i), 1}}));
    if (!s.isSigned) continue;
    if (i >= 1) {
      Lin short_;  // ¬m_i ∧ m_0 ∧ f: past the field's length, len ≠ 0
      short_.add(m(i), -1).add(m(0), 1).add(f, 1).constant = -2;
      QGPU_CHECK(b2.detector(short_, {{s.out.at(i), 2}}));
    }
    Lin beyond;  // m_i ∧ ¬r_i ∧ f: inside the length but past bit 31
    beyond.add(m(i), 1).add(r(i), -1).add(f, 1).constant = -2;
    QGPU_CHECK(b2.detector(beyond, {{s.out.at(i), 2}}));
  }
  return Ok{};
}

}  // namespace

Expected<GadgetReport> buildBfe(UnitWriter& level1, const MlpContext& ctx1, UnitWriter& level2,
                                const MlpContext& ctx2, const BfeSpec& s) {
  const std::string g = s.isSigned ? "bfe.s" : "bfe.u";
  Builder b1(level1, ctx1, g + " level 1"), b2(level2, ctx2, g + " level 2");
  QGPU_CHECK(b1.check());
  QGPU_CHECK(b2.check());
  if (s.shiftOutside) return usage(g, "shiftOutside is for buildBfeLevel1 (level 2 reads sh)");
  QGPU_CHECK(checkBfe(g, s, bfeBusDims(s.isSigned)));
  QGPU_CHECK(bfeLevel1(b1, s));
  QGPU_CHECK(bfeLevel2(b2, s));
  GadgetReport rep = b1.report();
  rep += b2.report();
  return rep;
}

Expected<GadgetReport> buildBfeLevel1(UnitWriter& level1, const MlpContext& ctx1,
                                      const BfeSpec& s) {
  const std::string g = s.isSigned ? "bfe.s" : "bfe.u";
  Builder b1(level1, ctx1, g + " level 1");
  QGPU_CHECK(b1.check());
  QGPU_CHECK(checkBfe(g, s, bfeBusDims(s.isSigned)));
  QGPU_CHECK(bfeLevel1(b1, s));
  return b1.report();
}



Expected<GadgetReport> buildPrmt(UnitWriter& units, const PrmtSpec& s, const MlpContext& ctx) {
  const std::string g = "prmt";
  Builder b(units, ctx, g);
  QGPU_CHECK(b.check());
  QGPU_CHECK(checkWidth(g, s.a, "a", 32, 32));
  QGPU_CHECK(checkWidth(g, s.b, "b", 32, 32));
  QGPU_CHECK(checkWidth(g, s.c, "c", 16, 32));
  QGPU_CHECK(checkWidth(g, s.out, "out", 32, 32));
  QGPU_CHECK(b.prior(s.prior, s.out));
  auto source = [&](int byte, int bit) {  // bit of byte 0..7 of {b, a}
    return byte < 4 ? s.a.at(8 * byte + bit) : s.b.at(8 * (byte - 4) + bit);
  };
  for (int i = 0; i < 4; ++i)
    for (int sel = 0; sel < 16; ++sel) {
      Lin nibble;
      for (int q = 0; q < 4; ++q) nibble.add(s.c.at(4 * i + q), sgn((sel >> q) & 1));
      nibble.constant = -3;
      const int byte = sel & 7;
      if (sel & 8) {
        std::vector<Down> all8;
        for (int k = 0; k < 8; ++k) all8.push_back({s.out.at(8 * i + k), 1});
        QGPU_CHECK(b.unit(nibble, {{source(byte, 7), 1.0f}}, all8));
      } else {
        for (int k = 0; k < 8; ++k)
          QGPU_CHECK(b.unit(nibble, {{source(byte, k), 1.0f}}, {{s.out.at(8 * i + k), 1}}));
      }
    }
  return b.report();
}

Expected<GadgetReport> buildAbs(UnitWriter& level1, const MlpContext& ctx1, UnitWriter& level2,
                                const MlpContext& ctx2, UnitWriter& level3,
                                const MlpContext& ctx3, const AbsSpec& s) {
  const std::string g = "abs";
  QGPU_CHECK(checkWidth(g, s.a, "a", 32, 32));
  QGPU_CHECK(checkWidth(g, s.zero, "zero", 32, 32));
  QGPU_CHECK(checkWidth(g, s.neg, "neg", 32, 32));
  QGPU_CHECK(checkWidth(g, s.out, "out", 32, 32));
  AdderSpec neg;  // zero + ~a + 1
  neg.a = s.zero;
  neg.b = s.a;
  neg.invertB = true;
  neg.carryIn = true;
  neg.bus = s.bus;
  neg.out = s.neg;
  neg.busPrior = s.busPrior;
  neg.outPrior = s.outPrior;
  QGPU_TRY(rep, buildAdder(level1, ctx1, level2, ctx2, neg));
  Field sign = s.a;
  sign.offset = s.a.at(31);
  sign.dims = 1;
  QGPU_TRY(mux, buildMux(level3, {{s.a, s.neg}, sign, Selector::Binary, s.out, s.outPrior}, ctx3));
  rep += mux;
  return rep;
}

}  // namespace qgpu::circuit
