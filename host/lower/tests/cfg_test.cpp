// Tests for host/lower/cfg.cpp's strength reduction (reduceStrength, run by cleanup): every rule
// checked against the machine's own semantics, oracle::evalAlu of the ORIGINAL op, on edge and
// random values with the immediate on either side; the factors it must leave alone; a wrong
// rewrite caught by the same check (its failing twin); the fields it keeps; cleanup reducing a
// factor it propagated; and PTX lowered end to end (interpreter and ptxeval against hand-worked
// words) with `mul.wide.s32 .., 4` as shifts, and its twin with a register factor kept a multiply.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <optional>
#include <random>
#include <string>
#include <vector>

#include "host/lower/tests/both_oracles.h"
#include "host/lower/vir.h"
#include "oracle/semantics.h"

namespace qgpu::lower {
namespace {

using machine::Op;

constexpr int kX = 0;  // the vreg of the non-immediate factor
constexpr int kC = 1;  // the vreg of mad's addend

// Edge values for x and c, then seeded random ones.
std::vector<uint32_t> sampleValues() {
  std::vector<uint32_t> v = {0u,          1u,          2u,          3u,          0xffffffffu,
                             0xfffffffeu, 0x80000000u, 0x7fffffffu, 0x80000001u, 0x40000000u,
                             0xc0000000u, 0x0000ffffu, 0x00010000u, 0xaaaaaaaau, 0x55555555u};
  std::mt19937 rng(20261203);
  for (int n = 0; n < 2000; ++n) v.push_back(static_cast<uint32_t>(rng()));
  return v;
}

uint32_t valueOf(const VOperand& o, uint32_t x, uint32_t c) {
  if (o.isImm()) return o.imm;
  if (o.isReg()) return o.reg == kX ? x : c;
  return 0;  // an unused slot (evalAlu reads only the op's sources)
}

uint32_t eval(const VInstr& i, uint32_t x, uint32_t c) {
  std::optional<uint32_t> r = oracle::evalAlu(i.op, valueOf(i.src[0], x, c),
                                              valueOf(i.src[1], x, c), valueOf(i.src[2], x, c));
  EXPECT_TRUE(r.has_value()) << machine::opInfo(i.op).mnemonic << " is not an ALU op";
  return r.value_or(0);
}

// The first (x, c) where `rewritten` differs from `original`, as evalAlu computes them; nullopt
// when they agree on every sample. The expected value is always evalAlu of the original op.
struct Counterexample {
  uint32_t x, c, want, got;
  bool usesC;  // mad: c is part of the input
  std::string str() const {
    return "at x = " + std::to_string(x) + (usesC ? ", c = " + std::to_string(c) : "") +
           ": evalAlu gives " + std::to_string(want) + ", the rewrite " + std::to_string(got);
  }
};
std::optional<Counterexample> firstDifference(const VInstr& original, const VInstr& rewritten) {
  static const std::vector<uint32_t> values = sampleValues();
  const bool usesC = original.op == Op::Mad;
  for (size_t n = 0; n < values.size(); ++n) {
    const uint32_t x = values[n];
    // For mad: every edge c against every x, and a random c per random x.
    std::vector<uint32_t> cs = {values[(n * 7 + 3) % values.size()]};
    if (usesC) cs.insert(cs.end(), values.begin(), values.begin() + 15);
    for (uint32_t c : cs) {
      const uint32_t want = eval(original, x, c), got = eval(rewritten, x, c);
      if (want != got) return Counterexample{x, c, want, got, usesC};
    }
  }
  return std::nullopt;
}

// op x, m (side 1) or op m, x (side 0); mad's addend is the vreg kC.
VInstr multiply(Op op, uint32_t m, int side) {
  VInstr i;
  i.op = op;
  i.dst = 7;
  i.src[side] = VOperand::i(m);
  i.src[1 - side] = VOperand::r(kX);
  if (op == Op::Mad) i.src[2] = VOperand::r(kC);
  return i;
}

std::string show(const VInstr& i) {
  std::string s = machine::opInfo(i.op).mnemonic;
  for (int k = 0; k < machine::numGeneralSources(i.op); ++k) {
    const VOperand& o = i.src[k];
    s += k ? ", " : " ";
    s += o.isImm() ? std::to_string(o.imm) : o.isReg() ? "v" + std::to_string(o.reg) : "?";
  }
  return s;
}

struct Rule {
  Op op;
  uint32_t m;
  Op to;
  VOperand a, b;  // the rewrite's src[0] and src[1] (None: unused)
};

// The rules of cfg.cpp's header, written out independently of the code under test.
std::vector<Rule> rules() {
  const VOperand x = VOperand::r(kX), c = VOperand::r(kC), none{};
  auto imm = [](uint32_t v) { return VOperand::i(v); };
  std::vector<Rule> r = {
      {Op::Mul, 0, Op::Mov, imm(0), none},    {Op::Mul, 1, Op::Mov, x, none},
      {Op::MulHiU, 0, Op::Mov, imm(0), none}, {Op::MulHiU, 1, Op::Mov, imm(0), none},
      {Op::MulHiS, 0, Op::Mov, imm(0), none}, {Op::MulHiS, 1, Op::ShrS, x, imm(31)},
      {Op::Mad, 0, Op::Mov, c, none},         {Op::Mad, 1, Op::Add, x, c},
  };
  for (uint32_t k = 1; k <= 31; ++k) {
    r.push_back({Op::Mul, 1u << k, Op::Shl, x, imm(k)});
    r.push_back({Op::MulHiU, 1u << k, Op::ShrU, x, imm(32 - k)});
    if (k <= 30) r.push_back({Op::MulHiS, 1u << k, Op::ShrS, x, imm(32 - k)});
  }
  return r;
}

TEST(ReduceStrength, EveryRuleIsExactAgainstEvalAluWithTheImmediateOnEitherSide) {
  int checked = 0;
  for (const Rule& rule : rules()) {
    for (int side : {0, 1}) {
      const VInstr original = multiply(rule.op, rule.m, side);
      VInstr rewritten = original;
      ASSERT_TRUE(reduceStrength(rewritten)) << show(original);
      EXPECT_EQ(rewritten.op, rule.to) << show(original) << " -> " << show(rewritten);
      EXPECT_EQ(rewritten.src[0], rule.a) << show(original) << " -> " << show(rewritten);
      EXPECT_EQ(rewritten.src[1], rule.b) << show(original) << " -> " << show(rewritten);
      EXPECT_EQ(rewritten.src[2], VOperand{}) << show(original) << " -> " << show(rewritten);
      if (auto d = firstDifference(original, rewritten))
        ADD_FAILURE() << show(original) << " -> " << show(rewritten) << " " << d->str();
      ++checked;
    }
  }
  EXPECT_EQ(checked, 2 * (8 + 31 + 31 + 30));
}

TEST(ReduceStrength, LeavesFactorsWithNoOneOpIdentityAlone) {
  // 2^31 is INT_MIN for mulhi.s; mad by 2^k would need a shift and an add; the rest are not 0, 1
  // or a power of two.
  const std::vector<std::pair<Op, uint32_t>> kept = {
      {Op::MulHiS, 0x80000000u}, {Op::Mad, 2},
      {Op::Mad, 0x80000000u},    {Op::Mul, 3},
      {Op::Mul, 0xffffffffu},    {Op::Mul, 0x80000001u},
      {Op::MulHiU, 6},           {Op::MulHiS, 0xffffffffu},
      {Op::MulHiS, 0xc0000000u}, {Op::Mad, 3},
      {Op::Mad, 0xffffffffu},    {Op::MulHiU, 0xfffffffeu},
  };
  for (auto [op, m] : kept)
    for (int side : {0, 1}) {
      const VInstr original = multiply(op, m, side);
      VInstr i = original;
      EXPECT_FALSE(reduceStrength(i)) << show(original) << " -> " << show(i);
      EXPECT_EQ(i.op, original.op);
      EXPECT_EQ(i.src, original.src) << show(original) << " -> " << show(i);
    }
  // Both factors registers or specials; ops that are no multiply.
  VInstr regs = multiply(Op::Mul, 4, 1);
  regs.src[1] = VOperand::s(machine::Special::TidX);
  EXPECT_FALSE(reduceStrength(regs));
  EXPECT_EQ(regs.op, Op::Mul);
  for (Op op : {Op::Add, Op::Shl, Op::DivU, Op::And}) {
    VInstr i = multiply(op, 4, 1);
    EXPECT_FALSE(reduceStrength(i)) << show(i);
  }
}

TEST(ReduceStrength, NoImmediateGivesAnInexactRewrite) {
  // A sweep independent of the rule table: every immediate near 0, every 2^k and its neighbours,
  // and random ones, for all four ops on either side. Whatever is rewritten agrees with evalAlu
  // of the original; a multiply is rewritten exactly when its factor is in the rule table.
  std::vector<uint32_t> ms;
  for (uint32_t m = 0; m <= 64; ++m) ms.push_back(m);
  for (int k = 0; k < 32; ++k)
    for (uint32_t d : {0u, 1u, 0xffffffffu}) ms.push_back((1u << k) + d);
  std::mt19937 rng(7);
  for (int n = 0; n < 64; ++n) ms.push_back(static_cast<uint32_t>(rng()));
  const std::vector<Rule> table = rules();
  int rewrites = 0;
  for (Op op : {Op::Mul, Op::MulHiU, Op::MulHiS, Op::Mad})
    for (uint32_t m : ms)
      for (int side : {0, 1}) {
        const VInstr original = multiply(op, m, side);
        VInstr i = original;
        const bool inTable = std::any_of(table.begin(), table.end(),
                                         [&](const Rule& r) { return r.op == op && r.m == m; });
        EXPECT_EQ(reduceStrength(i), inTable) << show(original) << " -> " << show(i);
        if (i.op == original.op) continue;
        ++rewrites;
        if (auto d = firstDifference(original, i))
          ADD_FAILURE() << show(original) << " -> " << show(i) << " " << d->str();
      }
  EXPECT_GT(rewrites, 200);
}

TEST(ReduceStrength, TheCheckRejectsAWrongRewrite) {
  // The failing twin of the exactness check: plausible rewrites that are not identities, each
  // found out by firstDifference (so a passing rule is not a check that cannot fail).
  auto rewrite = [](VInstr i, Op op, VOperand a, VOperand b) {
    i.op = op;
    i.src = {a, b, {}};
    return i;
  };
  const VOperand x = VOperand::r(kX);
  struct Wrong {
    VInstr original, rewritten;
  };
  const std::vector<Wrong> wrong = {
      // mulhi.s by INT_MIN is not the shift its unsigned twin is: floor(-x / 2), not x >>s 1.
      {multiply(Op::MulHiS, 0x80000000u, 1),
       rewrite(multiply(Op::MulHiS, 0, 1), Op::ShrS, x, VOperand::i(1))},
      // the sign word needs the arithmetic shift
      {multiply(Op::MulHiS, 1, 1),
       rewrite(multiply(Op::MulHiS, 0, 1), Op::ShrU, x, VOperand::i(31))},
      // signed and unsigned high words differ for negative x
      {multiply(Op::MulHiS, 4, 0),
       rewrite(multiply(Op::MulHiS, 0, 1), Op::ShrU, x, VOperand::i(30))},
      {multiply(Op::MulHiU, 4, 0),
       rewrite(multiply(Op::MulHiU, 0, 1), Op::ShrS, x, VOperand::i(30))},
      // an off-by-one shift amount
      {multiply(Op::Mul, 8, 1), rewrite(multiply(Op::Mul, 0, 1), Op::Shl, x, VOperand::i(2))},
      {multiply(Op::MulHiU, 8, 1),
       rewrite(multiply(Op::MulHiU, 0, 1), Op::ShrU, x, VOperand::i(28))},
      // mulhi.u by 1 is 0, not x
      {multiply(Op::MulHiU, 1, 1), rewrite(multiply(Op::MulHiU, 0, 1), Op::Mov, x, {})},
      // mad by 0 is the addend, not 0
      {multiply(Op::Mad, 0, 1), rewrite(multiply(Op::Mad, 0, 1), Op::Mov, VOperand::i(0), {})},
  };
  for (const Wrong& w : wrong)
    EXPECT_TRUE(firstDifference(w.original, w.rewritten).has_value())
        << show(w.original) << " -> " << show(w.rewritten) << " was not found out";
}

TEST(ReduceStrength, KeepsGuardDestinationsAndEveryOtherField) {
  VInstr i = multiply(Op::MulHiS, 16, 0);
  i.dst = 5;
  i.dstPred = 3;  // not what a mulhi writes, but the rewrite must not touch it
  i.psrc = {1, 2};
  i.guard = 4;
  i.guardNeg = true;
  i.space = machine::Space::Shared;
  i.offset = 12;
  i.loc = SourceLoc{"k.ptx", 9, 3};
  i.freshDef = true;
  VInstr want = i;
  want.op = Op::ShrS;
  want.src = {VOperand::r(kX), VOperand::i(28), {}};
  ASSERT_TRUE(reduceStrength(i));
  EXPECT_EQ(i.op, want.op);
  EXPECT_EQ(i.src, want.src);
  EXPECT_EQ(i.dst, want.dst);
  EXPECT_EQ(i.dstPred, want.dstPred);
  EXPECT_EQ(i.psrc, want.psrc);
  EXPECT_EQ(i.guard, want.guard);
  EXPECT_EQ(i.guardNeg, want.guardNeg);
  EXPECT_EQ(i.space, want.space);
  EXPECT_EQ(i.offset, want.offset);
  EXPECT_EQ(i.loc.file, want.loc.file);
  EXPECT_EQ(i.loc.line, want.loc.line);
  EXPECT_EQ(i.freshDef, want.freshDef);
}

TEST(Cleanup, ReducesAFactorItPropagatedAndPropagatesTheMovItLeaves) {
  // v0 = ld [0]; v1 = 8; v2 = v0 * v1; v3 = v0 * 0; st [v2], v3 ; exit
  // -> v2 = shl v0, 3, and v3 = mov 0 is propagated into the store and removed.
  VFunc f;
  f.name = "k";
  const int v0 = f.newReg(), v1 = f.newReg(), v2 = f.newReg(), v3 = f.newReg();
  VBlock b;
  VInstr ld;
  ld.op = Op::Ld, ld.dst = v0, ld.src[0] = VOperand::i(0);
  VInstr eight;
  eight.op = Op::Mov, eight.dst = v1, eight.src[0] = VOperand::i(8);
  VInstr mul;
  mul.op = Op::Mul, mul.dst = v2, mul.src[0] = VOperand::r(v0), mul.src[1] = VOperand::r(v1);
  VInstr zero;
  zero.op = Op::Mul, zero.dst = v3, zero.src[0] = VOperand::i(0), zero.src[1] = VOperand::r(v0);
  VInstr st;
  st.op = Op::St, st.src[0] = VOperand::r(v2), st.src[1] = VOperand::r(v3);
  b.ops = {ld, eight, mul, zero, st};
  b.term = VTerm{machine::TermKind::Exit};
  f.blocks.push_back(b);
  cleanup(f);
  ASSERT_EQ(f.blocks[0].ops.size(), 3u) << describe(f);
  const VInstr& shl = f.blocks[0].ops[1];
  EXPECT_EQ(shl.op, Op::Shl) << describe(f);
  EXPECT_EQ(shl.src[0], VOperand::r(v0)) << describe(f);
  EXPECT_EQ(shl.src[1], VOperand::i(3)) << describe(f);
  EXPECT_EQ(f.blocks[0].ops[2].op, Op::St) << describe(f);
  EXPECT_EQ(f.blocks[0].ops[2].src[1], VOperand::i(0)) << describe(f);
}

// ---- end to end ----

int count(const machine::Program& p, Op op) {
  int n = 0;
  for (const auto& b : p.blocks)
    for (const auto& i : b.ops) n += i.op == op ? 1 : 0;
  return n;
}

// Inputs at words 0..3 (one per thread), the 64-bit product's low word at 4 + t, its high word
// at 8 + t: `mul.wide.s32 %rd5, %r2, FACTOR` with %r2 = buf[t].
std::string wideKernel(const std::string& factor, const std::string& prologue = "") {
  return both::bufKernel(
      "mul.wide.u32 %rd4, %r7, 4;\nadd.s64 %rd2, %rd1, %rd4;\nld.global.u32 %r2, [%rd2];\n" +
          prologue,
      "mul.wide.s32 %rd5, %r2, " + factor +
          ";\ncvt.u32.u64 %r3, %rd5;\nshr.u64 %rd6, %rd5, 32;\n"
          "cvt.u32.u64 %r4, %rd6;\n" +
          both::outputs({{4, 3}, {8, 4}}));
}

both::Memory wideInputs() {
  both::Memory m{};
  // INT_MIN, -1, INT_MAX, INT_MIN + 1
  const uint32_t in[4] = {0x80000000u, 0xffffffffu, 0x7fffffffu, 0x80000001u};
  for (int t = 0; t < 4; ++t) m[t] = in[t];
  m[12] = 4;  // the register factor's word
  return m;
}

// By hand: x * 4 as a 64-bit signed product. INT_MIN * 4 = -2^33 = 0xfffffffe_00000000;
// -1 * 4 = 0xffffffff_fffffffc; INT_MAX * 4 = 0x00000001_fffffffc; (-2^31 + 1) * 4 =
// 0xfffffffe_00000004.
const std::vector<uint32_t> kWideWords = {
    0x80000000u, 0xffffffffu, 0x7fffffffu, 0x80000001u,  // inputs, untouched
    0x00000000u, 0xfffffffcu, 0xfffffffcu, 0x00000004u,  // low words
    0xfffffffeu, 0xffffffffu, 0x00000001u, 0xfffffffeu,  // high words
};

TEST(LowerStrength, MulWideS32ByFourBecomesShlAndShrS) {
  auto r = both::runBoth(wideKernel("4"), 4, wideInputs(), 1);
  both::expectBothWords(r, kWideWords);
  ASSERT_TRUE(r.ok());
  const std::string listing = machine::print(r->program);
  EXPECT_EQ(count(r->program, Op::Mul), 0) << listing;
  EXPECT_EQ(count(r->program, Op::MulHiS), 0) << listing;
  EXPECT_EQ(count(r->program, Op::MulHiU), 0) << listing;
  EXPECT_NE(listing.find("shr.s r"), std::string::npos) << listing;
  EXPECT_NE(listing.find(", 30\n"), std::string::npos) << listing;  // shr.s x, 32 - 2
  EXPECT_GE(count(r->program, Op::Shl), 2) << listing;              // the product's and tid's * 4
  EXPECT_TRUE(machine::verify(r->program).ok());
}

TEST(LowerStrength, ARegisterFactorKeepsTheMultiply) {
  // The twin: the same 4, loaded from memory (buf[12]), is no immediate, so mul and mulhi.s stay.
  auto r = both::runBoth(wideKernel("%r5", "ld.global.u32 %r5, [%rd1+48];\n"), 4, wideInputs(), 1);
  both::expectBothWords(r, kWideWords);
  ASSERT_TRUE(r.ok());
  const std::string listing = machine::print(r->program);
  EXPECT_EQ(count(r->program, Op::Mul), 1) << listing;
  EXPECT_EQ(count(r->program, Op::MulHiS), 1) << listing;
  EXPECT_EQ(count(r->program, Op::ShrS), 0) << listing;
}

TEST(LowerStrength, TheOtherRulesRunLikePtxevalAndPlainArithmetic) {
  // x = buf[t] (the four edge values above); each result at word 16 + 4j + t, worked out below in
  // 64-bit C++ (not evalAlu). Only the mul.hi.s32 by INT_MIN keeps a multiply.
  const std::string body =
      "mul.lo.s32 %r3, %r2, 1;\nmul.hi.s32 %r4, %r2, 1;\nmul.hi.u32 %r5, %r2, 8;\n"
      "mul.hi.s32 %r6, %r2, 1073741824;\nmad.lo.s32 %r8, %r2, 1, %r7;\n"
      "mul.hi.s32 %r9, %r2, -2147483648;\n" +
      both::outputs({{16, 3}, {20, 4}, {24, 5}, {28, 6}, {32, 8}, {36, 9}});
  auto r = both::runBoth(
      both::bufKernel(
          "mul.wide.u32 %rd4, %r7, 4;\nadd.s64 %rd2, %rd1, %rd4;\nld.global.u32 %r2, [%rd2];\n",
          body),
      4, wideInputs(), 1);
  std::vector<uint32_t> want(40, 0);
  for (uint32_t t = 0; t < 4; ++t) {
    const uint32_t x = wideInputs()[t];
    const int64_t sx = static_cast<int32_t>(x);
    want[t] = x;
    want[12] = 4;
    want[16 + t] = x;
    want[20 + t] = static_cast<uint32_t>(static_cast<uint64_t>(sx * 1) >> 32);
    want[24 + t] = static_cast<uint32_t>((static_cast<uint64_t>(x) * 8) >> 32);
    want[28 + t] = static_cast<uint32_t>(static_cast<uint64_t>(sx * (int64_t{1} << 30)) >> 32);
    want[32 + t] = x + t;
    want[36 + t] = static_cast<uint32_t>(static_cast<uint64_t>(sx * INT32_MIN) >> 32);
  }
  both::expectBothWords(r, want);
  ASSERT_TRUE(r.ok());
  const std::string listing = machine::print(r->program);
  EXPECT_EQ(count(r->program, Op::Mul), 0) << listing;
  EXPECT_EQ(count(r->program, Op::MulHiU), 0) << listing;
  EXPECT_EQ(count(r->program, Op::Mad), 0) << listing;
  EXPECT_EQ(count(r->program, Op::MulHiS), 1) << listing;
}

}  // namespace
}  // namespace qgpu::lower
