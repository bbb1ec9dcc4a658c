// qgpu/host/lower/translate.cpp — pass 2: PTX instructions to machine operations on vregs.
//
// Input: a FlatFunction (no calls, no call-sequence params). Output: a VFunc whose blocks are
// the PTX basic blocks (a block starts at a label, after `bra`, `ret`, `exit` and block
// barriers; `bar.red` adds two more barrier boundaries), block 0 being the entry. This file forms
// the blocks and their terminators and hands every other instruction to its family
// (translate.h lists the files); after each one, the ValueMap checks that every demanded 64-bit
// high half was written.
#include <algorithm>
#include <set>

#include "host/lower/translate.h"

namespace qgpu::lower {
namespace {

using machine::TermKind;
using ptx::Opcode;
using ptx::OperandKind;
using tr::Ctx;

bool isBlockBarrier(const ptx::Instruction& in) {
  return (in.op == Opcode::Bar || in.op == Opcode::Barrier) && in.mods.barrier == ptx::BarrierKind::Sync;
}

// Arithmetic on general registers: reads the sources per their widths, then the 64-bit or the
// 16/32-bit family.
Status arithmetic(Ctx& c) {
  const auto& in = *c.in;
  const auto& m = in.mods;
  const Opcode op = in.op;
  const int w = tr::typeBits(in.types[0]);
  if (in.dsts.size() != 1) return c.invalid("wrong destination count");
  QGPU_TRY(d, c.dest(in.dsts[0]));
  std::vector<VOperand> s;
  for (size_t k = 0; k < in.srcs.size(); ++k) {
    const auto& o = in.srcs[k];
    if (o.kind == OperandKind::Reg && c.regBits(o) == 1) return c.invalid("a predicate used as a value");
    bool last = k + 1 == in.srcs.size();
    int sw = w;
    if ((op == Opcode::Shl || op == Opcode::Shr) && last && in.srcs.size() == 2) sw = 32;  // shift amounts are .u32
    if (op == Opcode::Mad && m.wide && last) sw = 2 * w;
    if (op == Opcode::Bfe && k > 0) sw = 32;
    if (op == Opcode::Bfi && k > 1) sw = 32;  // position and length
    if (op == Opcode::Shf && last) sw = 32;
    QGPU_TRY(x, c.val(o, sw));
    s.push_back(x);
  }
  return w == 64 ? tr::translate64(c, d, s) : tr::translate32(c, d, s);
}

Status instruction(Ctx& c) {
  const auto& in = *c.in;
  switch (in.op) {
    case Opcode::Ld: case Opcode::St: case Opcode::Atom:
      return tr::translateMemory(c);
    case Opcode::Shfl: case Opcode::Vote: case Opcode::Bar: case Opcode::Barrier:
      return tr::translateWarp(c);
    case Opcode::Activemask:
      return tr::translateWarp(c);
    case Opcode::Membar: case Opcode::Fence:
      // The machine is sequentially consistent (docs/lowering.md, "Fences"): nothing to order.
      return Ok{};
    case Opcode::Call: case Opcode::Exit: case Opcode::Ret: case Opcode::Bra:
      return c.unsupported(std::string("opcode ") + ptx::spelling(in.op) + " here");
    default:
      break;
  }
  if (in.types.empty()) return c.invalid("missing type");
  // 8-bit values exist here only in memory, parameters and conversions (cvt.u8/.s8).
  if (tr::typeBits(in.types[0]) == 8 && in.op != Opcode::Cvt) return c.unsupported("8-bit arithmetic");
  QGPU_TRY(done, tr::translateConvert(c));
  if (done) return Ok{};
  return arithmetic(c);
}

// Block formation: leaders are instruction 0, every label target and the instruction after a
// bra, ret/exit or block barrier; each leader gets a block, and an index past the end an Exit.
Status formBlocks(Ctx& c, TranslateInfo* info) {
  const FlatFunction& f = c.f;
  tr::Emitter& em = c.em;
  const size_t n = f.body.size();
  std::set<size_t> leaders{0};
  for (const auto& [name, idx] : f.labels) leaders.insert(std::min<size_t>(idx, n));
  for (size_t i = 0; i < n; ++i) {
    Opcode o = f.body[i].op;
    if (o == Opcode::Bra || o == Opcode::Ret || o == Opcode::Exit || isBlockBarrier(f.body[i])) leaders.insert(i + 1);
  }
  std::map<size_t, int> blockOf;
  for (size_t l : leaders) blockOf[l] = em.newBlock();
  if (info) info->basicBlocks = static_cast<int>(leaders.size() - (leaders.count(n) ? 1 : 0));
  int exitBlock = kNone;
  auto getExit = [&] {
    if (exitBlock == kNone) exitBlock = em.newBlock();
    em.terminateBlock(exitBlock, VTerm{TermKind::Exit});
    return exitBlock;
  };
  if (leaders.count(n)) em.terminateBlock(blockOf[n], VTerm{TermKind::Exit});
  for (auto it = leaders.begin(); it != leaders.end(); ++it) {
    size_t start = *it;
    if (start == n) break;
    size_t end = std::next(it) == leaders.end() ? n : *std::next(it);
    em.setCurrent(blockOf[start]);
    for (size_t i = start; i < end; ++i) {
      const ptx::Instruction& in = f.body[i];
      c.in = &in;
      em.setContext(kNone, false, in.loc);
      Opcode o = in.op;
      int g = kNone;
      if (in.guarded) {
        if (in.guardReg >= f.regs.size() || c.vals.pred(in.guardReg) == kNone) return c.invalid("guard is not a predicate");
        g = c.vals.pred(in.guardReg);
      }
      if (o == Opcode::Bra) {
        if (in.srcs.size() != 1 || in.srcs[0].kind != OperandKind::Symbol) return c.unsupported("indirect branch");
        auto lab = f.labels.find(in.srcs[0].name);
        if (lab == f.labels.end()) return c.invalid("unknown label `" + in.srcs[0].name + "`");
        int target = blockOf.at(std::min<size_t>(lab->second, n));
        int next = blockOf.at(end);
        if (in.guarded) em.terminate(VTerm{TermKind::Branch, g, in.guardNegated, target, next});
        else em.terminate(VTerm{TermKind::Jump, kNone, false, kNone, target});
        continue;
      }
      if (o == Opcode::Ret || o == Opcode::Exit) {
        if (in.guarded) em.terminate(VTerm{TermKind::Branch, g, in.guardNegated, getExit(), blockOf.at(end)});
        else em.terminate(VTerm{TermKind::Exit});
        continue;
      }
      if (isBlockBarrier(in)) {
        if (in.guarded) return c.unsupported("guarded barrier");
        if (in.srcs.size() != 1 || in.srcs[0].kind != OperandKind::Imm || in.srcs[0].imm != 0)
          return c.unsupported("barrier other than `bar.sync 0` (named barriers, thread counts)");
        em.terminate(VTerm{TermKind::Barrier, kNone, false, kNone, blockOf.at(end)});
        continue;
      }
      if (in.guarded) {
        if (o == Opcode::Bar || o == Opcode::Barrier || o == Opcode::Shfl || o == Opcode::Vote)
          return c.unsupported("guarded warp or barrier operation");
        em.setContext(g, in.guardNegated, in.loc);
      }
      QGPU_CHECK(instruction(c));
      QGPU_CHECK(c.vals.finish(in, f));
    }
    if (em.isOpen(em.current())) em.terminate(VTerm{TermKind::Jump, kNone, false, kNone, blockOf.at(end)});
  }
  return Ok{};
}

}  // namespace

Expected<VFunc> translate(const FlatFunction& flat, TranslateInfo* info) {
  VFunc out;
  QGPU_TRY(shared, tr::layoutShared(flat));
  out.sharedWords = shared.words;
  out.localWords = shared.localWords;
  tr::ValueMap vals;
  vals.init(flat, out);
  tr::Emitter em(out);
  Ctx c{flat, em, vals, shared, {}, nullptr, tr::frameConstants(flat, shared.localOffset)};
  for (const auto& i : flat.body) {
    for (const auto& s : i.srcs)
      if (s.kind == OperandKind::Reg) c.usedPreds.insert(s.reg);
    if (i.guarded) c.usedPreds.insert(i.guardReg);
  }
  QGPU_CHECK(formBlocks(c, info));
  out.name = flat.name;
  return out;
}

}  // namespace qgpu::lower
