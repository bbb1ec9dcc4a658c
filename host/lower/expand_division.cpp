// qgpu/host/lower/expand_division.cpp — div/rem → restoring shift-subtract loop (see the header;
// the design and its costs: docs/circuit.md §8 "Division", docs/lowering.md).
#include "host/lower/expand_division.h"

#include <bit>
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "host/lower/expand_loop.h"

namespace qgpu::lower {

using machine::Block;
using machine::Instr;
using machine::kNoPred;
using machine::Op;
using machine::Operand;
using machine::OperandKind;
using machine::Program;

bool isDivision(Op op) { return op == Op::DivU || op == Op::DivS || op == Op::RemU || op == Op::RemS; }

namespace {

using namespace expand;  // NOLINT(google-build-using-namespace): the expansion kit, this pass's vocabulary

constexpr const char* kShiftSubtractLoop = "a shift-subtract loop";

// Quotient bits per loop step: 2 bits of 5 ops + the counter's 2 = 14 of a block's 16 ops (3 bits
// would be 17).
constexpr int kBitsPerStep = 2;
constexpr int kSteps = 32 / kBitsPerStep;

// The loop block: `kBitsPerStep` quotient bits of restoring division per step, then the counter.
// r holds the partial remainder, x the dividend shifted left with the quotient bits shifted in at
// bit 0. Per bit:
//   shf.l r, x, r, 1       r = (r << 1) | (x >> 31)
//   shl x, x, 1
//   set.ge.u p0, r, b
//   @p0 sub r, r, b
//   @p0 or x, x, 1         the quotient bit
// No 33rd bit is needed (docs/circuit.md §8 planned a check of r's top bit, 2 more ops per bit):
// before bit k (k = 0..31, from the top) r is the k-bit prefix of a reduced mod b, so r <= a >>
// (32 - k) < 2^31 and the shift never drops a bit (b = 0 included: nothing is subtracted, r is the
// prefix itself). b = 0: every bit is set (r >= 0) and nothing is subtracted, so x = 0xffffffff and
// r = a: exactly div.u / rem.u by 0.
// The loop body (its terminator, on p0, is the splice's).
Block loopBlock(uint8_t r, uint8_t x, uint8_t n, Operand b) {
  Block blk;
  for (int k = 0; k < kBitsPerStep; ++k) {
    blk.ops.push_back(alu(Op::ShfLW, r, R(x), R(r), I(1)));
    blk.ops.push_back(alu(Op::Shl, x, R(x), I(1)));
    blk.ops.push_back(cmp(Op::SetGeU, 0, R(r), b));
    blk.ops.push_back(guarded(alu(Op::Sub, r, R(r), b), 0));
    blk.ops.push_back(guarded(alu(Op::Or, x, R(x), I(1)), 0));
  }
  blk.ops.push_back(alu(Op::Sub, n, R(n), I(1)));
  blk.ops.push_back(cmp(Op::SetNe, 0, R(n), I(0)));
  return blk;
}

class DivisionExpander {
 public:
  DivisionExpander(Program p, const ExpandDivisionOptions& options) : s_(std::move(p), options.opLocs), locsOut_(options.locsOut) {}

  Expected<Program> run(ExpandDivisionStats& stats) {
    for (;;) {
      size_t b = 0, i = 0;
      if (!findDivision(b, i)) break;
      if (s_.program().blocks[b].ops[i].dst == 0) {
        // A division into r0 has no effect (it cannot fault): drop it, guarded or not.
        s_.erase(b, i);
        ++stats.removed;
        continue;
      }
      QGPU_TRY(replaced, expandAt(b, i));
      stats.expanded += replaced;
      if (replaced == 2) ++stats.fused;
    }
    if (locsOut_ != nullptr) *locsOut_ = s_.locs();
    return s_.take();
  }

 private:
  bool findDivision(size_t& b, size_t& i) const {
    const Program& p = s_.program();
    for (b = 0; b < p.blocks.size(); ++b)
      for (i = 0; i < p.blocks[b].ops.size(); ++i)
        if (isDivision(p.blocks[b].ops[i].op)) return true;
    return false;
  }

  // The index of the op after `i` in block b that divides the same operands under the same guard
  // with the other result (q = a / b and r = a % b), when one loop can give both: nothing between
  // them writes a, b or the guard, or touches the partner's destination (written early, before
  // the ops between), and the division's own destination is not an operand. Else npos.
  size_t partnerOf(size_t b, size_t i) const {
    const Block& blk = s_.program().blocks[b];
    const Instr& d = blk.ops[i];
    Op want = Op::Mov;
    switch (d.op) {
      case Op::DivU: want = Op::RemU; break;
      case Op::RemU: want = Op::DivU; break;
      case Op::DivS: want = Op::RemS; break;
      case Op::RemS: want = Op::DivS; break;
      default: return std::string::npos;
    }
    const RegSet operands = regBit(d.src[0]) | regBit(d.src[1]);
    if (operands >> d.dst & 1) return std::string::npos;
    for (size_t j = i + 1; j < blk.ops.size(); ++j) {
      const Instr& in = blk.ops[j];
      if (in.op == want && in.src[0] == d.src[0] && in.src[1] == d.src[1] && in.guard == d.guard && in.dst != 0 &&
          in.dst != d.dst && !(operands >> in.dst & 1)) {
        for (size_t k = i + 1; k < j; ++k) {
          const Instr& mid = blk.ops[k];
          RegSet touched = machine::writesReg(mid.op) ? RegSet{1} << mid.dst : 0;
          for (int s = 0; s < machine::numGeneralSources(mid.op); ++s)
            touched |= regBit(mid.src[static_cast<size_t>(s)]);
          const bool writesOperand = machine::writesReg(mid.op) && (operands >> mid.dst & 1);
          const bool writesGuard = d.guard.pred != kNoPred && machine::writesPred(mid.op) && mid.dstPred == d.guard.pred;
          if (writesOperand || writesGuard || (touched >> in.dst & 1)) return std::string::npos;
        }
        return j;
      }
      // A later write of an operand or the guard ends the search.
      if (machine::writesReg(in.op) && (operands >> in.dst & 1)) return std::string::npos;
      if (d.guard.pred != kNoPred && machine::writesPred(in.op) && in.dstPred == d.guard.pred) return std::string::npos;
    }
    return std::string::npos;
  }

  // Expands the division at (b, i), and its partner (partnerOf) into the same loop; returns how
  // many ops it replaced (1 or 2).
  Expected<int> expandAt(size_t b, size_t i) {
    const Block& blk = s_.program().blocks[b];
    const Instr d = blk.ops[i];
    const size_t pj = partnerOf(b, i);
    const bool fused = pj != std::string::npos;
        const Operand a = d.src[0], bOp = d.src[1];
    const bool isSigned = d.op == Op::DivS || d.op == Op::RemS;
    const bool wantRem = d.op == Op::RemU || d.op == Op::RemS;
    const bool isGuarded = d.guard.pred != kNoPred;

    QGPU_CHECK(s_.roomForLoop(b, i, kShiftSubtractLoop));

    // Registers dead after the division and not its operands or destination.
    RegSet taken = regBit(a) | regBit(bOp) | (RegSet{1} << d.dst);
    if (fused) taken |= RegSet{1} << blk.ops[pj].dst;
    const std::vector<uint8_t> freeRegs = s_.deadAfter(b, i, taken);

    // Predicates the continuation reads that the head defined, and the division's own guard:
    // each is saved to a register (selp) before the loop and reloaded (set.ne) after it.
    const PredSet rbk = s_.readAfter(b, i);
    const PredSet save = s_.mustSave(b, i);

    // The destination doubles as the result register when every active lane writes it and the
    // loop does not read it afterwards (b throughout; a in the signed fix-ups). The partner's
    // result always moves: its destination may be read by the ops before it.
    const bool dstIsResult = !isGuarded && !(regBit(bOp) >> d.dst & 1) && !(isSigned && (regBit(a) >> d.dst & 1));
    // |b| needs a register only when b is one: an immediate's is folded, a special is >= 0.
    const bool needAbsB = isSigned && isReg(bOp);
    const size_t needRegs = 3 - (dstIsResult ? 1 : 0) + (needAbsB ? 1 : 0) + static_cast<size_t>(std::popcount(save));
    if (freeRegs.size() < needRegs) {
      std::string names;
      for (uint8_t r : freeRegs) names += (names.empty() ? "r" : ", r") + std::to_string(r);
      return s_.overLimit(b, i, kShiftSubtractLoop, "it needs " + std::to_string(needRegs) + " registers that are dead there (for the " +
                                 "remainder, the quotient and the counter" + (needAbsB ? ", |b|" : "") +
                                 (save ? ", one per predicate live across the split" : "") +
                                 (dstIsResult ? "; the destination holds one of them" : "") + ") and " +
                                 std::to_string(freeRegs.size()) + " are" + (names.empty() ? "" : " (" + names + ")"));
    }
    size_t next = 0;
    auto take = [&]() { return freeRegs[next++]; };
    const uint8_t rr = (dstIsResult && wantRem) ? d.dst : take();
    const uint8_t xx = (dstIsResult && !wantRem) ? d.dst : take();
    const uint8_t nn = take();
    const uint8_t absB = needAbsB ? take() : 0;
    std::vector<std::pair<uint8_t, uint8_t>> saved;  // (predicate, register)
    for (uint8_t q = 0; q < machine::kPreds; ++q)
      if (save >> q & 1) saved.emplace_back(q, take());
    const uint8_t result = wantRem ? rr : xx;

    // The loop's divisor: b, or |b| for signed divisions.
    Operand loopB = bOp;
    if (isSigned && bOp.kind == OperandKind::Imm) {
      const auto sb = static_cast<int32_t>(bOp.imm);
      loopB = I(sb < 0 ? 0u - bOp.imm : bOp.imm);  // abs(INT_MIN) = 0x80000000: the magnitude
    } else if (needAbsB) {
      loopB = R(absB);
    }

    // Head: the ops before the division, the predicate saves, the setup; then the loop.
    std::vector<Instr> head = saveOps(saved);
    if (isSigned)
      head.push_back(alu(Op::Abs, xx, a));  // abs(INT_MIN) = 0x80000000: the magnitude, unsigned
    else if (!(isReg(a) && a.reg == xx))
      head.push_back(alu(Op::Mov, xx, a));
    head.push_back(alu(Op::Mov, rr, I(0)));  // after x: rr may be a's register (rem.u into a)
    head.push_back(alu(Op::Mov, nn, I(kSteps)));
    if (needAbsB) head.push_back(alu(Op::Abs, absB, bOp));

    // Continuation: reloads, signed fix-ups, the result, the ops after the division.
    std::vector<Instr> cont = reloadOps(saved);
    if (isSigned) {
      std::vector<uint8_t> freePreds;
      for (uint8_t q = 0; q < machine::kPreds; ++q)
        if (!((rbk | save) >> q & 1)) freePreds.push_back(q);
      const bool signOfB = (fused || !wantRem) && isReg(bOp);
      if (freePreds.size() < (signOfB ? 2u : 1u))
        return s_.overLimit(b, i, kShiftSubtractLoop, "its signed fix-up needs " + std::to_string(signOfB ? 2 : 1) +
                                   " predicates that are free after it and " + std::to_string(freePreds.size()) +
                                   " are");
      const uint8_t f1 = freePreds[0];
      // The quotient is negative when the signs differ, the remainder when a is negative
      // (b = 0: x = 0xffffffff, so a < 0 ? 1 : -1; INT_MIN / -1: x = 2^31 = INT_MIN).
      if (fused) {
        cont.push_back(cmp(Op::SetLtS, f1, a, I(0)));
        cont.push_back(guarded(alu(Op::Neg, rr, R(rr)), f1));
        if (signOfB) {
          const uint8_t f2 = freePreds[1];
          cont.push_back(cmp(Op::SetLtS, f2, bOp, I(0)));
          cont.push_back(pred2(Op::PXor, f1, f1, f2));
        } else if (bOp.kind == OperandKind::Imm && static_cast<int32_t>(bOp.imm) < 0) {
          cont.push_back(pnot(f1, f1));
        }
        cont.push_back(guarded(alu(Op::Neg, xx, R(xx)), f1));
      } else if (wantRem) {
        cont.push_back(cmp(Op::SetLtS, f1, a, I(0)));
      } else if (signOfB) {
        const uint8_t f2 = freePreds[1];
        cont.push_back(cmp(Op::SetLtS, f1, a, I(0)));
        cont.push_back(cmp(Op::SetLtS, f2, bOp, I(0)));
        cont.push_back(pred2(Op::PXor, f1, f1, f2));
      } else {
        const bool bNegative = bOp.kind == OperandKind::Imm && static_cast<int32_t>(bOp.imm) < 0;
        cont.push_back(cmp(bNegative ? Op::SetGeS : Op::SetLtS, f1, a, I(0)));
      }
      if (!fused) cont.push_back(guarded(alu(Op::Neg, result, R(result)), f1));
    }
    if (result != d.dst) {
      Instr mv = alu(Op::Mov, d.dst, R(result));
      mv.guard = d.guard;
      cont.push_back(mv);
    }
    if (fused) {
      Instr mv = alu(Op::Mov, blk.ops[pj].dst, R(wantRem ? xx : rr));
      mv.guard = d.guard;
      cont.push_back(mv);
    }
    const size_t skip = fused ? pj : std::string::npos;
    QGPU_CHECK(s_.split(b, i, skip, std::move(head), loopBlock(rr, xx, nn, loopB), 0, std::move(cont), kShiftSubtractLoop));
    return fused ? 2 : 1;
  }

  Splicer s_;
  std::vector<std::vector<SourceLoc>>* locsOut_;
};

}  // namespace

Expected<Program> expandDivision(const Program& program, const ExpandDivisionOptions& options,
                                 ExpandDivisionStats* stats) {
  return expand::runExpansion<DivisionExpander>(program, options, stats, "division");
}

}  // namespace qgpu::lower
