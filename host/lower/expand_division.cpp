// qgpu/host/lower/expand_division.cpp — div/rem → restoring shift-subtract loop (see the header;
// the design and its costs: docs/circuit.md §8 "Division", docs/lowering.md).
#include "host/lower/expand_division.h"

#include <bit>
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

namespace qgpu::lower {

using machine::Block;
using machine::Guard;
using machine::Instr;
using machine::kExitTarget;
using machine::kNoPred;
using machine::Op;
using machine::Operand;
using machine::OperandKind;
using machine::Program;
using machine::TermKind;
using machine::Terminator;

bool isDivision(Op op) { return op == Op::DivU || op == Op::DivS || op == Op::RemU || op == Op::RemS; }

namespace {

using RegSet = uint32_t;   // bit r: register r (r0 never set)
using PredSet = uint32_t;  // bit p: predicate p

// Quotient bits per loop step: 2 bits of 5 ops + the counter's 2 = 14 of a block's 16 ops (3 bits
// would be 17).
constexpr int kBitsPerStep = 2;
constexpr int kSteps = 32 / kBitsPerStep;

bool isReg(const Operand& o) { return o.kind == OperandKind::Reg && o.reg != 0; }
RegSet regBit(const Operand& o) { return isReg(o) ? RegSet{1} << o.reg : 0; }

// ---- Liveness of registers per lane (a guarded write keeps the old value: it reads dst) ----

void transfer(const Instr& in, RegSet& live) {
  const bool guarded = in.guard.pred != kNoPred;
  RegSet use = 0, def = 0;
  for (int s = 0; s < machine::numGeneralSources(in.op); ++s) use |= regBit(in.src[static_cast<size_t>(s)]);
  if (machine::writesReg(in.op) && in.dst != 0) {
    if (guarded)
      use |= RegSet{1} << in.dst;
    else
      def |= RegSet{1} << in.dst;
  }
  live = (live & ~def) | use;
}

template <typename F>
void forSuccessors(const Terminator& t, F f) {
  if (t.kind == TermKind::Exit) return;
  if (t.next != kExitTarget) f(t.next);
  if (t.kind == TermKind::Branch && t.taken != kExitTarget) f(t.taken);
}

// Registers live out of each block (a fixed point over the CFG; tiny programs, so simple rounds).
std::vector<RegSet> liveOut(const Program& p) {
  const size_t n = p.blocks.size();
  std::vector<RegSet> in(n, 0), out(n, 0);
  for (bool changed = true; changed;) {
    changed = false;
    for (size_t b = n; b-- > 0;) {
      RegSet o = 0;
      forSuccessors(p.blocks[b].term, [&](uint8_t s) { if (s < n) o |= in[s]; });
      RegSet live = o;
      for (size_t i = p.blocks[b].ops.size(); i-- > 0;) transfer(p.blocks[b].ops[i], live);
      if (o != out[b] || live != in[b]) changed = true;
      out[b] = o;
      in[b] = live;
    }
  }
  return out;
}

// ---- Predicates around the split point (predicates are block-local: docs/machine.md §4) ----

// The predicates the ops from `from` on (and the terminator) read before an unguarded write
// kills them. A guarded write keeps the old bits in its guard-false lanes, so it reads them.
PredSet readBeforeKill(const Block& blk, size_t from) {
  PredSet kill = 0, read = 0;
  auto use = [&](uint8_t p) {
    if (p != kNoPred && !(kill >> p & 1)) read |= PredSet{1} << p;
  };
  for (size_t i = from; i < blk.ops.size(); ++i) {
    const Instr& in = blk.ops[i];
    use(in.guard.pred);
    for (int s = 0; s < machine::numPredSources(in.op); ++s) use(in.psrc[static_cast<size_t>(s)]);
    if (machine::writesPred(in.op)) {
      if (in.guard.pred != kNoPred)
        use(in.dstPred);
      else
        kill |= PredSet{1} << in.dstPred;
    }
  }
  if (blk.term.kind == TermKind::Branch) use(blk.term.pred);
  return read;
}

PredSet writtenBefore(const Block& blk, size_t until) {
  PredSet w = 0;
  for (size_t i = 0; i < until; ++i)
    if (machine::writesPred(blk.ops[i].op)) w |= PredSet{1} << blk.ops[i].dstPred;
  return w;
}

// ---- Op builders (canonical form: unused fields at their defaults, as verify() wants) ----

Instr alu(Op op, uint8_t dst, Operand a, Operand b = {}, Operand c = {}) {
  Instr in;
  in.op = op;
  in.dst = dst;
  in.src = {a, b, c};
  return in;
}
Instr cmp(Op op, uint8_t p, Operand a, Operand b) {
  Instr in;
  in.op = op;
  in.dstPred = p;
  in.src = {a, b, Operand{}};
  return in;
}
Instr pred2(Op op, uint8_t d, uint8_t a, uint8_t b) {
  Instr in;
  in.op = op;
  in.dstPred = d;
  in.psrc = {a, b};
  return in;
}
Instr selp(uint8_t dst, Operand a, Operand b, uint8_t p) {
  Instr in;
  in.op = Op::Selp;
  in.dst = dst;
  in.src = {a, b, Operand{}};
  in.psrc = {p, kNoPred};
  return in;
}
Instr guarded(Instr in, uint8_t p, bool negate = false) {
  in.guard = Guard{p, negate};
  return in;
}
Operand R(uint8_t r) { return Operand::r(r); }
Operand I(uint32_t v) { return Operand::i(v); }

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
Block loopBlock(uint8_t r, uint8_t x, uint8_t n, Operand b, uint8_t self, uint8_t next) {
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
  blk.term = Terminator{TermKind::Branch, 0, false, self, next};
  return blk;
}

class Expander {
 public:
  Expander(Program p, const ExpandDivisionOptions& options) : p_(std::move(p)) {
    const auto* given = options.opLocs;
    bool fits = given != nullptr && given->size() == p_.blocks.size();
    for (size_t b = 0; fits && b < p_.blocks.size(); ++b) fits = (*given)[b].size() == p_.blocks[b].ops.size();
    if (fits) {
      locs_ = *given;
    } else {
      locs_.resize(p_.blocks.size());
      for (size_t b = 0; b < p_.blocks.size(); ++b) locs_[b].resize(p_.blocks[b].ops.size());
    }
  }

  Expected<Program> run(ExpandDivisionStats& stats) {
    for (;;) {
      size_t b = 0, i = 0;
      if (!findDivision(b, i)) break;
      const Instr& d = p_.blocks[b].ops[i];
      if (d.dst == 0) {
        // A division into r0 has no effect (it cannot fault): drop it, guarded or not.
        p_.blocks[b].ops.erase(p_.blocks[b].ops.begin() + static_cast<long>(i));
        locs_[b].erase(locs_[b].begin() + static_cast<long>(i));
        ++stats.removed;
        continue;
      }
      QGPU_TRY(replaced, expandAt(b, i));
      stats.expanded += replaced;
      if (replaced == 2) ++stats.fused;
    }
    return std::move(p_);
  }

 private:
  bool findDivision(size_t& b, size_t& i) const {
    for (b = 0; b < p_.blocks.size(); ++b)
      for (i = 0; i < p_.blocks[b].ops.size(); ++i)
        if (isDivision(p_.blocks[b].ops[i].op)) return true;
    return false;
  }

  // The index of the op after `i` in block b that divides the same operands under the same guard
  // with the other result (q = a / b and r = a % b), when one loop can give both: nothing between
  // them writes a, b or the guard, or touches the partner's destination (written early, before
  // the ops between), and the division's own destination is not an operand. Else npos.
  size_t partnerOf(size_t b, size_t i) const {
    const Block& blk = p_.blocks[b];
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

  Diag overLimit(size_t b, size_t i, const std::string& why) const {
    const Instr& d = p_.blocks[b].ops[i];
    const SourceLoc& loc = locs_[b][i];
    std::string where = "kernel `" + p_.name + "`: expanding `" + machine::print(d) + "` (block " +
                        std::to_string(b) + " op " + std::to_string(i);
    if (loc.line != 0) where += ", PTX line " + std::to_string(loc.line);
    return makeDiag(ErrorKind::OverLimit, where + ") into a shift-subtract loop: " + why, loc);
  }

  // Expands the division at (b, i), and its partner (partnerOf) into the same loop; returns how
  // many ops it replaced (1 or 2).
  Expected<int> expandAt(size_t b, size_t i) {
    const Block& blk = p_.blocks[b];
    const Instr d = blk.ops[i];
    const size_t pj = partnerOf(b, i);
    const bool fused = pj != std::string::npos;
    const SourceLoc loc = locs_[b][i];
    const Operand a = d.src[0], bOp = d.src[1];
    const bool isSigned = d.op == Op::DivS || d.op == Op::RemS;
    const bool wantRem = d.op == Op::RemU || d.op == Op::RemS;
    const bool isGuarded = d.guard.pred != kNoPred;

    if (p_.blocks.size() + 2 > static_cast<size_t>(machine::kMaxBlocks))
      return overLimit(b, i, "the program would need " + std::to_string(p_.blocks.size() + 2) +
                                 " program blocks; the machine has " + std::to_string(machine::kMaxBlocks));

    // Registers dead after the division and not its operands or destination.
    RegSet liveAfter = liveOut(p_)[b];
    for (size_t k = blk.ops.size(); k-- > i + 1;) transfer(blk.ops[k], liveAfter);
    RegSet taken = liveAfter | regBit(a) | regBit(bOp) | (RegSet{1} << d.dst) | 1u;
    if (fused) taken |= RegSet{1} << blk.ops[pj].dst;
    std::vector<uint8_t> freeRegs;
    for (uint8_t r = 1; r < machine::kRegs; ++r)
      if (!(taken >> r & 1)) freeRegs.push_back(r);

    // Predicates the continuation reads that the head defined, and the division's own guard:
    // each is saved to a register (selp) before the loop and reloaded (set.ne) after it.
    const PredSet rbk = readBeforeKill(blk, i + 1);
    PredSet save = rbk & writtenBefore(blk, i);
    if (isGuarded) save |= PredSet{1} << d.guard.pred;

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
      return overLimit(b, i, "it needs " + std::to_string(needRegs) + " registers that are dead there (for the " +
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
    std::vector<Instr> head(blk.ops.begin(), blk.ops.begin() + static_cast<long>(i));
    for (auto [q, t] : saved) head.push_back(selp(t, I(1), I(0), q));
    if (isSigned)
      head.push_back(alu(Op::Abs, xx, a));  // abs(INT_MIN) = 0x80000000: the magnitude, unsigned
    else if (!(isReg(a) && a.reg == xx))
      head.push_back(alu(Op::Mov, xx, a));
    head.push_back(alu(Op::Mov, rr, I(0)));  // after x: rr may be a's register (rem.u into a)
    head.push_back(alu(Op::Mov, nn, I(kSteps)));
    if (needAbsB) head.push_back(alu(Op::Abs, absB, bOp));

    // Continuation: reloads, signed fix-ups, the result, the ops after the division.
    std::vector<Instr> cont;
    for (auto [q, t] : saved) cont.push_back(cmp(Op::SetNe, q, R(t), I(0)));
    if (isSigned) {
      std::vector<uint8_t> freePreds;
      for (uint8_t q = 0; q < machine::kPreds; ++q)
        if (!((rbk | save) >> q & 1)) freePreds.push_back(q);
      const bool signOfB = (fused || !wantRem) && isReg(bOp);
      if (freePreds.size() < (signOfB ? 2u : 1u))
        return overLimit(b, i, "its signed fix-up needs " + std::to_string(signOfB ? 2 : 1) +
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
          Instr flip;
          flip.op = Op::PNot;
          flip.dstPred = f1;
          flip.psrc = {f1, kNoPred};
          cont.push_back(flip);
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
    const size_t contOps = cont.size() + (blk.ops.size() - i - 1) - (fused ? 1 : 0);
    if (head.size() > static_cast<size_t>(machine::kMaxOpsPerBlock))
      return overLimit(b, i, "the ops before it and its setup need " + std::to_string(head.size()) +
                                 " ops in one block; a block holds " + std::to_string(machine::kMaxOpsPerBlock));
    if (contOps > static_cast<size_t>(machine::kMaxOpsPerBlock))
      return overLimit(b, i, "its result and the ops after it need " + std::to_string(contOps) +
                                 " ops in one block; a block holds " + std::to_string(machine::kMaxOpsPerBlock));
    const size_t added = cont.size();  // the continuation's own ops, before the ops after the division
    for (size_t k = i + 1; k < blk.ops.size(); ++k)
      if (k != pj) cont.push_back(blk.ops[k]);

    // Blocks after b move up by 2 (the loop at b + 1, the continuation at b + 2); a target b
    // stays b: the head is where the block starts.
    auto shift = [&](uint8_t& t) {
      if (t != kExitTarget && t > b) t = static_cast<uint8_t>(t + 2);
    };
    for (Block& x : p_.blocks) {
      if (x.term.kind == TermKind::Exit) continue;
      shift(x.term.next);
      if (x.term.kind == TermKind::Branch) shift(x.term.taken);
    }
    const auto loopIndex = static_cast<uint8_t>(b + 1);
    Block contBlock{std::move(cont), p_.blocks[b].term};
    Block loop = loopBlock(rr, xx, nn, loopB, loopIndex, static_cast<uint8_t>(b + 2));
    Block headBlock{std::move(head), Terminator{TermKind::Jump, kNoPred, false, 0, loopIndex}};

    std::vector<SourceLoc> headLocs(locs_[b].begin(), locs_[b].begin() + static_cast<long>(i));
    headLocs.resize(headBlock.ops.size(), loc);
    std::vector<SourceLoc> contLocs(added, loc);
    for (size_t k = i + 1; k < locs_[b].size(); ++k)
      if (k != pj) contLocs.push_back(locs_[b][k]);
    std::vector<SourceLoc> loopLocs(loop.ops.size(), loc);

    p_.blocks[b] = std::move(headBlock);
    p_.blocks.insert(p_.blocks.begin() + static_cast<long>(b) + 1, {std::move(loop), std::move(contBlock)});
    locs_[b] = std::move(headLocs);
    locs_.insert(locs_.begin() + static_cast<long>(b) + 1, {std::move(loopLocs), std::move(contLocs)});
    return fused ? 2 : 1;
  }

  Program p_;
  std::vector<std::vector<SourceLoc>> locs_;  // parallel to p_.blocks[b].ops
};

int countOps(const Program& p) {
  int n = 0;
  for (const Block& b : p.blocks) n += static_cast<int>(b.ops.size());
  return n;
}

}  // namespace

Expected<Program> expandDivision(const Program& program, const ExpandDivisionOptions& options,
                                 ExpandDivisionStats* stats) {
  QGPU_CHECK(machine::verify(program));
  ExpandDivisionStats local;
  local.blocksBefore = static_cast<int>(program.blocks.size());
  local.opsBefore = countOps(program);
  Expander expander(program, options);
  QGPU_TRY(out, expander.run(local));
  if (auto status = machine::verify(out); !status.ok())
    return makeDiag(ErrorKind::Internal,
                    "expanding division produced an invalid program for `" + program.name +
                        "`: " + status.error().message);
  local.blocksAfter = static_cast<int>(out.blocks.size());
  local.opsAfter = countOps(out);
  if (stats) *stats = local;
  return out;
}

}  // namespace qgpu::lower
