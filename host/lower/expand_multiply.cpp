// qgpu/host/lower/expand_multiply.cpp — mul/mad/mulhi → shift-add chains and loops (see the
// header; the costs: docs/lowering.md "Expanding multiplication").
#include "host/lower/expand_multiply.h"

#include <algorithm>
#include <bit>
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "host/lower/expand_loop.h"
#include "oracle/semantics.h"

namespace qgpu::lower {

using machine::Block;
using machine::Instr;
using machine::kNoPred;
using machine::Op;
using machine::Operand;
using machine::OperandKind;
using machine::Program;

bool isMultiply(Op op) { return op == Op::Mul || op == Op::Mad || isMultiplyHigh(op); }
bool isMultiplyHigh(Op op) { return op == Op::MulHiU || op == Op::MulHiS; }

namespace {

using namespace expand;  // NOLINT(google-build-using-namespace): the expansion kit, this pass's vocabulary

constexpr const char* kShiftAddLoop = "a shift-add loop";
constexpr const char* kHalves = "16-bit halves";
constexpr int kLowBitsPerStep = 3;  // mul/mad: 3 bits of 4 ops + the exit test = 13 of 16 ops

struct Term {
  int shift;      // 0..31
  bool negative;  // −x·2^shift
};

// The non-adjacent form of k modulo 2^32, highest digit first: k ≡ Σ ±2^shift, no two digits
// adjacent, at most 17 of them; a digit at 2^32 vanishes modulo 2^32.
std::vector<Term> nafTerms(uint32_t k) {
  std::vector<Term> terms;
  uint64_t v = k;
  for (int j = 0; v != 0; ++j, v >>= 1) {
    if (!(v & 1)) continue;
    const bool negative = (v & 3) == 3;
    if (j < 32) terms.push_back({j, negative});
    v = negative ? v + 1 : v - 1;
  }
  return {terms.rbegin(), terms.rend()};
}

class MultiplyExpander {
 public:
  // Every replaced multiply leaves (the pass refuses a program it cannot expand whole), so the
  // pending ones count one record each in the limits; the kept ones (highOnly) their two.
  MultiplyExpander(Program p, const ExpandMultiplyOptions& options)
      : highOnly_(options.highOnly),
        replaced_(options.highOnly ? &isMultiplyHigh : &isMultiply),
        ownSpillSlots_(p.spillSlots),
        s_(std::move(p), options.opLocs, replaced_),
        locsOut_(options.locsOut) {}

  Expected<Program> run(ExpandMultiplyStats& stats) {
    for (;;) {
      size_t b = 0, i = 0;
      if (!findMultiply(b, i)) break;
      const Instr& m = s_.program().blocks[b].ops[i];
      if (m.dst == 0) {
        s_.erase(b, i);
        ++stats.removed;
      } else if (chainAt(b, i)) {
        ++stats.chains;
      } else if (m.op == Op::Mul || m.op == Op::Mad) {
        QGPU_CHECK(lowLoopAt(b, i));
        ++stats.loops;
      } else if (!highOnly_) {
        QGPU_CHECK(highLoopAt(b, i));
        ++stats.loops;
      } else {
        QGPU_CHECK(halvesAt(b, i));
        ++stats.halves;
      }
    }
    if (locsOut_ != nullptr) *locsOut_ = s_.locs();
    return s_.take();
  }

 private:
  bool findMultiply(size_t& b, size_t& i) const {
    const Program& p = s_.program();
    for (b = 0; b < p.blocks.size(); ++b)
      for (i = 0; i < p.blocks[b].ops.size(); ++i)
        if (replaced_(p.blocks[b].ops[i].op)) return true;
    return false;
  }

  // `mul`/`mad` by an immediate, in place, when the chain fits the block and the registers do:
  // acc = ±(x << j) for the top digit, then acc ±= x << j per further digit (through t), then
  // mad's + c. Every op carries the multiply's guard (they write no predicate, so the guard holds
  // throughout). acc is the destination unless it is x or c (read after acc's first write).
  bool chainAt(size_t b, size_t i) {
    const Instr m = s_.program().blocks[b].ops[i];
    if (m.op != Op::Mul && m.op != Op::Mad) return false;
    const bool immB = m.src[1].kind == OperandKind::Imm;
    if (!immB && m.src[0].kind != OperandKind::Imm) return false;
    const Operand x = immB ? m.src[0] : m.src[1];
    const uint32_t k = immB ? m.src[1].imm : m.src[0].imm;
    const bool mad = m.op == Op::Mad;
    const std::vector<Term> terms = nafTerms(k);
    const bool needT = std::ranges::any_of(terms.begin() + (terms.empty() ? 0 : 1), terms.end(),
                                           [](const Term& t) { return t.shift != 0; });
    const bool dstIsAcc = !(regBit(x) >> m.dst & 1) && !(mad && (regBit(m.src[2]) >> m.dst & 1));
    const size_t needRegs = (dstIsAcc ? 0 : 1) + (needT ? 1 : 0);
    RegSet taken = regBit(x) | (RegSet{1} << m.dst);
    if (mad) taken |= regBit(m.src[2]);
    const std::vector<uint8_t> dead = s_.deadAfter(b, i, taken);
    if (dead.size() < needRegs) return false;
    const uint8_t acc = dstIsAcc ? m.dst : dead[0];
    const uint8_t t = needT ? dead[dstIsAcc ? 0 : 1] : 0;

    std::vector<Instr> ops;
    if (terms.empty()) {
      ops.push_back(alu(Op::Mov, acc, I(0)));
    } else {
      const Term& top = terms.front();
      ops.push_back(top.shift == 0 ? alu(Op::Mov, acc, x) : alu(Op::Shl, acc, x, I(static_cast<uint32_t>(top.shift))));
      if (top.negative) ops.push_back(alu(Op::Neg, acc, R(acc)));
      for (size_t n = 1; n < terms.size(); ++n) {
        Operand addend = x;
        if (terms[n].shift != 0) {
          ops.push_back(alu(Op::Shl, t, x, I(static_cast<uint32_t>(terms[n].shift))));
          addend = R(t);
        }
        ops.push_back(alu(terms[n].negative ? Op::Sub : Op::Add, acc, R(acc), addend));
      }
    }
    if (mad) ops.push_back(alu(Op::Add, acc, R(acc), m.src[2]));
    if (acc != m.dst) ops.push_back(alu(Op::Mov, m.dst, R(acc)));
    const std::vector<Instr>& blockOps = s_.program().blocks[b].ops;
    if (s_.records(blockOps) - 1 + s_.records(ops) > machine::kMaxOpsPerBlock) return false;
    for (Instr& in : ops) in.guard = m.guard;
    s_.replace(b, i, std::move(ops));
    return true;
  }

  // The registers and saved predicates a split needs: `count` dead registers (not the operands or
  // the destination) after the saves', or OverLimit naming what they are for.
  struct Frame {
    std::vector<uint8_t> regs;
    std::vector<std::pair<uint8_t, uint8_t>> saved;  // (predicate, register)
  };
  // The first `count` registers of `pool` for the values, the next ones for the saved predicates.
  static void fill(Frame& f, const std::vector<uint8_t>& pool, size_t count, PredSet save) {
    f.regs.assign(pool.begin(), pool.begin() + static_cast<long>(count));
    for (uint8_t q = 0, n = 0; q < machine::kPreds; ++q)
      if (save >> q & 1) f.saved.emplace_back(q, pool[count + n++]);
  }
  Expected<Frame> frame(size_t b, size_t i, RegSet taken, size_t count,
                        const std::string& forWhat) const {
    const PredSet save = s_.mustSave(b, i);
    const std::vector<uint8_t> dead = s_.deadAfter(b, i, taken);
    const size_t need = count + static_cast<size_t>(std::popcount(save));
    if (dead.size() < need) {
      std::string names;
      for (uint8_t r : dead) names += (names.empty() ? "r" : ", r") + std::to_string(r);
      return s_.overLimit(b, i, kShiftAddLoop,
                          "it needs " + std::to_string(need) + " registers that are dead there (" +
                              forWhat + (save ? ", one per predicate live across the split" : "") +
                              ") and " + std::to_string(dead.size()) + " are" +
                              (names.empty() ? "" : " (" + names + ")"));
    }
    Frame f;
    fill(f, dead, count, save);
    return f;
  }

  // mul/mad: m = brev(min.u(a, b)), M = max.u(a, b), acc = c (mad) or 0; per bit of m from the
  // top (bit 0 of min first): @(m < 0) acc += M; M <<= 1; m <<= 1; on while m != 0. acc is the
  // destination when the multiply is unguarded: a, b and c are all read in the head.
  Status lowLoopAt(size_t b, size_t i) {
    QGPU_CHECK(s_.roomForLoop(b, i, kShiftAddLoop));
    const Instr mu = s_.program().blocks[b].ops[i];
    const bool isGuarded = mu.guard.pred != kNoPred;
    RegSet taken = regBit(mu.src[0]) | regBit(mu.src[1]) | (RegSet{1} << mu.dst);
    if (mu.op == Op::Mad) taken |= regBit(mu.src[2]);
    QGPU_TRY(f, frame(b, i, taken, isGuarded ? 3 : 2, "the multiplier, the multiplicand" +
                                                           std::string(isGuarded ? ", the sum" : "")));
    const uint8_t mr = f.regs[0], big = f.regs[1], acc = isGuarded ? f.regs[2] : mu.dst;

    std::vector<Instr> head = saveOps(f.saved);
    head.push_back(alu(Op::MinU, mr, mu.src[0], mu.src[1]));
    head.push_back(alu(Op::MaxU, big, mu.src[0], mu.src[1]));
    head.push_back(alu(Op::Brev, mr, R(mr)));
    head.push_back(alu(Op::Mov, acc, mu.op == Op::Mad ? mu.src[2] : I(0)));
    Block loop;
    for (int k = 0; k < kLowBitsPerStep; ++k) {
      loop.ops.push_back(cmp(Op::SetLtS, 0, R(mr), I(0)));
      loop.ops.push_back(guarded(alu(Op::Add, acc, R(acc), R(big)), 0));
      loop.ops.push_back(alu(Op::Shl, big, R(big), I(1)));
      loop.ops.push_back(alu(Op::Shl, mr, R(mr), I(1)));
    }
    loop.ops.push_back(cmp(Op::SetNe, 0, R(mr), I(0)));
    std::vector<Instr> cont = reloadOps(f.saved);
    if (acc != mu.dst) {
      Instr mv = alu(Op::Mov, mu.dst, R(acc));
      mv.guard = mu.guard;
      cont.push_back(mv);
    }
    return s_.split(b, i, std::string::npos, std::move(head), std::move(loop), 0, std::move(cont), kShiftAddLoop);
  }

  // mulhi.u/mulhi.s: the 64-bit sum hi:lo of M·2^j (M = max.u(a, b), shifted as Mh:Ml) over the
  // set bits j of min.u(a, b), read from the top of m = brev(min) as in lowLoopAt. Per bit:
  //   set.lt.s p0, m, 0        the bit
  //   set.lt.u p1, m, 0        p1 = false (nothing is below 0 unsigned)
  //   @p0 add lo, lo, Ml
  //   @p0 set.lt.u p1, lo, Ml  the carry out of lo
  //   @p0 add hi, hi, Mh
  //   @p1 add hi, hi, 1
  //   shf.l Mh, Ml, Mh, 1      Mh:Ml <<= 1
  //   shl Ml, Ml, 1
  //   shl m, m, 1
  //   set.ne p0, m, 0          on while a bit is left
  // mulhi.s: the signed high word is hi − (a < 0 ? b : 0) − (b < 0 ? a : 0) modulo 2^32 (a = A −
  // 2^32·[A < 0] for the unsigned reading A), fixed up in the continuation, which needs a and b:
  // the destination holds hi only when it is neither (and the multiply is unguarded).
  Status highLoopAt(size_t b, size_t i) {
    QGPU_CHECK(s_.roomForLoop(b, i, kShiftAddLoop));
    const Instr mu = s_.program().blocks[b].ops[i];
    const Operand a = mu.src[0], bOp = mu.src[1];
    const bool isSigned = mu.op == Op::MulHiS;
    const bool dstIsHi = mu.guard.pred == kNoPred && !(isSigned && ((regBit(a) | regBit(bOp)) >> mu.dst & 1));
    const RegSet taken = regBit(a) | regBit(bOp) | (RegSet{1} << mu.dst);
    QGPU_TRY(f, frame(b, i, taken, dstIsHi ? 4 : 5,
                      "the multiplier, the multiplicand's two words, the sum's low word" +
                          std::string(dstIsHi ? "" : ", its high word")));
    const uint8_t mr = f.regs[0], ml = f.regs[1], mh = f.regs[2], lo = f.regs[3];
    const uint8_t hi = dstIsHi ? mu.dst : f.regs[4];

    std::vector<Instr> head = saveOps(f.saved);
    head.push_back(alu(Op::MinU, mr, a, bOp));
    head.push_back(alu(Op::MaxU, ml, a, bOp));
    head.push_back(alu(Op::Brev, mr, R(mr)));
    head.push_back(alu(Op::Mov, mh, I(0)));
    head.push_back(alu(Op::Mov, lo, I(0)));
    head.push_back(alu(Op::Mov, hi, I(0)));
    Block loop;
    loop.ops = {cmp(Op::SetLtS, 0, R(mr), I(0)),
                cmp(Op::SetLtU, 1, R(mr), I(0)),
                guarded(alu(Op::Add, lo, R(lo), R(ml)), 0),
                guarded(cmp(Op::SetLtU, 1, R(lo), R(ml)), 0),
                guarded(alu(Op::Add, hi, R(hi), R(mh)), 0),
                guarded(alu(Op::Add, hi, R(hi), I(1)), 1),
                alu(Op::ShfLW, mh, R(ml), R(mh), I(1)),
                alu(Op::Shl, ml, R(ml), I(1)),
                alu(Op::Shl, mr, R(mr), I(1)),
                cmp(Op::SetNe, 0, R(mr), I(0))};

    std::vector<Instr> cont = reloadOps(f.saved);
    if (isSigned) {
      // A predicate free after the split: not read by the ops after it, not a reloaded one.
      const PredSet busy = s_.readAfter(b, i) | s_.mustSave(b, i);
      uint8_t fix = kNoPred;
      for (uint8_t q = 0; q < machine::kPreds && fix == kNoPred; ++q)
        if (!(busy >> q & 1)) fix = q;
      if (fix == kNoPred)
        return s_.overLimit(b, i, kShiftAddLoop, "its signed fix-up needs a predicate that is free after it and none is");
      for (const auto& [neg, other] : {std::pair{a, bOp}, std::pair{bOp, a}}) {
        if (neg.kind == OperandKind::Imm) {
          if (static_cast<int32_t>(neg.imm) < 0) cont.push_back(alu(Op::Sub, hi, R(hi), other));
          continue;
        }
        cont.push_back(cmp(Op::SetLtS, fix, neg, I(0)));
        cont.push_back(guarded(alu(Op::Sub, hi, R(hi), other), fix));
      }
    }
    if (hi != mu.dst) {
      Instr mv = alu(Op::Mov, mu.dst, R(hi));
      mv.guard = mu.guard;
      cont.push_back(mv);
    }
    return s_.split(b, i, std::string::npos, std::move(head), std::move(loop), 0, std::move(cont), kShiftAddLoop);
  }

  // mulhi.u/mulhi.s through the target's own low multiplies (highOnly), straight code over a split
  // block: with a = u1·2^16 + u0 and b = v1·2^16 + v0 (halves),
  //   t  = u1·v0 + (u0·v0 >> 16)               < 2^32: no carry
  //   P  = u0·v1 + t, c its carry out           c = min.u(t − min.u(P, t), 1)
  //   hi = u1·v1 + ({c, P} >> 16)               shf.r: bits 16..47 of the 33-bit sum
  // which is ⌊a·b / 2^32⌋ since ⌊a·b / 2^16⌋ = u1·v1·2^16 + u0·v1 + t. mulhi.s then subtracts b
  // where a < 0 and a where b < 0 (the signed high word modulo 2^32), by masks (shr.s by 31), so
  // no op writes a predicate. Three registers: x, y and the sum d, which is the destination when
  // the multiply is unguarded and neither operand (a and b are read to the end); otherwise a dead
  // one, moved into the destination under the guard at the end; where too few are dead, live ones
  // are borrowed through spill slots (borrowingFrame). 16 ops (mulhi.s 22, fewer with an
  // immediate), 20 records: over one block, so the block is split (Splicer::splitStraight).
  Status halvesAt(size_t b, size_t i) {
    const Instr mu = s_.program().blocks[b].ops[i];
    Operand a = mu.src[0], bOp = mu.src[1];
    if (a.kind == OperandKind::Imm) std::swap(a, bOp);  // both products commute
    const bool isGuarded = mu.guard.pred != kNoPred;
    const RegSet taken = regBit(a) | regBit(bOp) | (RegSet{1} << mu.dst);
    const bool dstIsSum = !isGuarded && !((regBit(a) | regBit(bOp)) >> mu.dst & 1);
    QGPU_TRY(f, borrowingFrame(b, i, taken, dstIsSum ? 2 : 3));
    const uint8_t x = f.regs[0], y = f.regs[1], d = dstIsSum ? mu.dst : f.regs[2];

    std::vector<Instr> body;
    if (a.kind == OperandKind::Imm) {  // both immediates: the value itself
      body.push_back(alu(Op::Mov, d, I(oracle::evalAlu(mu.op, a.imm, bOp.imm, 0).value())));
    } else {
      const bool immB = bOp.kind == OperandKind::Imm;
      const Operand v0 = immB ? I(bOp.imm & 0xffffu) : R(y), v1 = immB ? I(bOp.imm >> 16) : R(y);
      auto low = [&](uint8_t r, Operand w) { body.push_back(alu(Op::And, r, w, I(0xffffu))); };
      auto high = [&](uint8_t r, Operand w) { body.push_back(alu(Op::ShrU, r, w, I(16))); };
      low(x, a);
      if (!immB) low(y, bOp);
      body.push_back(alu(Op::Mul, d, R(x), v0));
      high(d, R(d));
      high(x, a);
      body.push_back(alu(Op::Mad, d, R(x), v0, R(d)));  // t
      low(x, a);
      if (!immB) high(y, bOp);
      body.push_back(alu(Op::Mad, x, R(x), v1, R(d)));  // P
      body.push_back(alu(Op::MinU, y, R(x), R(d)));
      body.push_back(alu(Op::Sub, d, R(d), R(y)));
      body.push_back(alu(Op::MinU, d, R(d), I(1)));  // c
      body.push_back(alu(Op::ShfRW, d, R(x), R(d), I(16)));
      high(x, a);
      if (!immB) high(y, bOp);
      body.push_back(alu(Op::Mad, d, R(x), v1, R(d)));  // hi, unsigned
      if (mu.op == Op::MulHiS)
        for (const auto& [neg, other] : {std::pair{a, bOp}, std::pair{bOp, a}}) {
          if (neg.kind == OperandKind::Imm) {
            if (static_cast<int32_t>(neg.imm) < 0) body.push_back(alu(Op::Sub, d, R(d), other));
            continue;
          }
          body.push_back(alu(Op::ShrS, x, neg, I(31)));
          body.push_back(alu(Op::And, x, R(x), other));
          body.push_back(alu(Op::Sub, d, R(d), R(x)));
        }
    }
    std::vector<Instr> setup, finish = reloadOps(f.saved);
    for (size_t k = 0; k < f.borrowed.size(); ++k) {
      Instr save;
      save.op = Op::StLocal;
      save.src[0] = R(f.borrowed[k]);
      save.offset = ownSpillSlots_ + static_cast<int32_t>(k);
      setup.push_back(save);
    }
    const std::vector<Instr> saves = saveOps(f.saved);
    setup.insert(setup.end(), saves.begin(), saves.end());
    if (d != mu.dst) {
      Instr mv = alu(Op::Mov, mu.dst, R(d));
      mv.guard = mu.guard;
      finish.push_back(mv);
    }
    for (size_t k = 0; k < f.borrowed.size(); ++k) {
      Instr reload;
      reload.op = Op::LdLocal;
      reload.dst = f.borrowed[k];
      reload.offset = ownSpillSlots_ + static_cast<int32_t>(k);
      finish.push_back(reload);
    }
    QGPU_CHECK(
        s_.splitStraight(b, i, std::move(setup), std::move(body), std::move(finish), kHalves));
    s_.useSpillSlots(ownSpillSlots_ + static_cast<int>(f.borrowed.size()));
    return Ok{};
  }

  // frame() for the halves: the registers dead after the op first, then (where too few are) ones
  // live across it but for the multiply's own, each borrowed — stored to a spill slot past the
  // program's own before the body, reloaded after it. OverLimit when even that is too few, or the
  // slots do not fit shared memory (kSharedWords; the launch's threads are verify()'s at run).
  struct BorrowingFrame : Frame {
    std::vector<uint8_t> borrowed;
  };
  Expected<BorrowingFrame> borrowingFrame(size_t b, size_t i, RegSet taken, size_t count) const {
    const PredSet save = s_.mustSave(b, i);
    std::vector<uint8_t> pool = s_.deadAfter(b, i, taken);
    const size_t need = count + static_cast<size_t>(std::popcount(save));
    BorrowingFrame f;
    for (uint8_t r = 1; r < machine::kRegs && pool.size() + f.borrowed.size() < need; ++r)
      if (!(taken >> r & 1) && std::ranges::find(pool, r) == pool.end()) f.borrowed.push_back(r);
    if (pool.size() + f.borrowed.size() < need)
      return s_.overLimit(b, i, kHalves,
                          "it needs " + std::to_string(need) +
                              " registers besides its operands and " +
                              std::to_string(pool.size() + f.borrowed.size()) + " are");
    const Program& p = s_.program();
    if (const size_t words = p.sharedWords + ownSpillSlots_ + f.borrowed.size();
        words > machine::kSharedWords)
      return s_.overLimit(b, i, kHalves,
                          "it borrows " + std::to_string(f.borrowed.size()) +
                              " registers through spill slots and " + std::to_string(words) +
                              " words of shared memory do not fit the machine's " +
                              std::to_string(machine::kSharedWords));
    pool.insert(pool.end(), f.borrowed.begin(), f.borrowed.end());
    fill(f, pool, count, save);
    return f;
  }

  bool highOnly_;          // the target multiplies the low half itself (mul and mad stay)
  bool (*replaced_)(Op);   // the ops this run replaces: isMultiply, or isMultiplyHigh
  int32_t ownSpillSlots_;  // the input's; the halves' borrowed registers go to the slots after
  Splicer s_;
  std::vector<std::vector<SourceLoc>>* locsOut_;
};

}  // namespace

Expected<Program> expandMultiply(const Program& program, const ExpandMultiplyOptions& options,
                                 ExpandMultiplyStats* stats) {
  return expand::runExpansion<MultiplyExpander>(program, options, stats, "multiplication");
}

}  // namespace qgpu::lower
