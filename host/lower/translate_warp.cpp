// qgpu/host/lower/translate_warp.cpp — warp and CTA collectives that are not block boundaries:
// shfl, vote, bar.warp.sync (nothing: a warp only ever runs its active lanes together) and
// bar.red (__syncthreads_count/and/or, through the hidden shared counter and two barriers).
#include "host/lower/translate.h"

namespace qgpu::lower::tr {
namespace {

using machine::Op;
using machine::Space;
using machine::Special;
using machine::TermKind;
using ptx::BarrierKind;
using ptx::OperandKind;

Status shfl(Ctx& c) {
  const auto& in = *c.in;
  const auto& m = in.mods;
  if (in.types.empty() || typeBits(in.types[0]) != 32) return c.unsupported("shfl of a non-32-bit type");
  Op op;
  switch (m.shfl) {
    case ptx::ShflMode::Up: op = Op::ShflUp; break;
    case ptx::ShflMode::Down: op = Op::ShflDown; break;
    case ptx::ShflMode::Bfly: op = Op::ShflBfly; break;
    case ptx::ShflMode::Idx: op = Op::ShflIdx; break;
    default: return c.unsupported("shfl without a mode");
  }
  size_t want = m.sync ? 4 : 3;
  if (in.srcs.size() != want || in.dsts.empty()) return c.invalid("wrong shfl operand count");
  if (in.dsts.size() > 1 && c.usedPreds.count(in.dsts[1].reg))
    return c.unsupported("the predicate result of shfl (`d|p`) is used");
  QGPU_TRY(d, c.dest(in.dsts[0]));
  VInstr v;
  v.op = op;
  v.dst = d.lo;
  for (size_t k = 0; k < 3; ++k) {
    QGPU_TRY(x, c.val(in.srcs[k], 32));
    v.src[k] = x;
  }
  c.em.emit(v);
  return Ok{};
}

Status vote(Ctx& c) {
  const auto& in = *c.in;
  const auto mode = in.mods.vote;
  if (in.srcs.empty() || in.dsts.size() != 1) return c.invalid("wrong vote operand count");
  QGPU_TRY(p, c.predOf(in.srcs[0]));
  VInstr v;
  v.psrc = {p, kNone};
  if (mode == ptx::VoteMode::Ballot) {
    v.op = Op::Ballot;
    QGPU_TRY(d, c.dest(in.dsts[0]));
    v.dst = d.lo;
  } else if (mode == ptx::VoteMode::Any || mode == ptx::VoteMode::All) {
    v.op = mode == ptx::VoteMode::Any ? Op::VoteAny : Op::VoteAll;
    QGPU_TRY(d, c.predOf(in.dsts[0]));
    v.dstPred = d;
  } else if (mode == ptx::VoteMode::Uni) {
    // uni: every active lane has the same predicate = all(p) or none(p) = all(p) or !any(p).
    QGPU_TRY(d, c.predOf(in.dsts[0]));
    int all = c.em.newPred(), any = c.em.newPred(), none = c.em.newPred();
    v.op = Op::VoteAll;
    v.dstPred = all;
    c.em.emit(v);
    v.op = Op::VoteAny;
    v.dstPred = any;
    c.em.emit(v);
    c.em.pop(Op::PNot, none, any);
    c.em.pop(Op::POr, d, all, none);
    return Ok{};
  } else {
    return c.unsupported(std::string("vote.") + ptx::voteModeName(mode));
  }
  c.em.emit(v);
  return Ok{};
}

// activemask.b32 d: the warp's active lanes = the ballot of a predicate every lane holds true.
Status activemask(Ctx& c) {
  const auto& in = *c.in;
  if (in.dsts.size() != 1) return c.invalid("wrong activemask operand count");
  QGPU_TRY(d, c.dest(in.dsts[0]));
  int t = c.em.newPred();
  c.em.cmp(Op::SetEq, t, VOperand::i(0), VOperand::i(0));
  VInstr v;
  v.op = Op::Ballot;
  v.psrc = {t, kNone};
  v.dst = d.lo;
  c.em.emit(v);
  c.writeHi(d, VOperand::i(0));
  return Ok{};
}

Status barRed(Ctx& c, BarrierKind kind) {
  // v = p ? 1 : 0; atom.shared.add H, v; Barrier; r = ld.shared H; Barrier; atom.shared.add H, -v.
  // The first barrier makes every thread's add visible before any read; the second keeps every
  // read before any subtraction, so H is back to 0 for the next use (shared memory starts zeroed).
  const auto& in = *c.in;
  Emitter& em = c.em;
  if (in.guarded) return c.unsupported("guarded bar.red");
  if (in.srcs.size() != 2 || in.srcs[0].kind != OperandKind::Imm || in.srcs[0].imm != 0)
    return c.unsupported("bar.red other than `bar.red.op d, 0, p` (barrier 0, all threads)");
  if (in.dsts.size() != 1) return c.invalid("bar.red needs one destination");
  QGPU_TRY(p, c.predOf(in.srcs[1]));
  auto h = VOperand::i(static_cast<uint32_t>(c.shared.hiddenCounter));
  int v = em.tmp();
  em.selp(v, VOperand::i(1), VOperand::i(0), p);
  VInstr add;
  add.op = Op::AtomAdd;
  add.space = Space::Shared;
  add.src = {h, VOperand::r(v), {}};
  em.emit(add);
  int b1 = em.newBlock();
  em.terminate(VTerm{TermKind::Barrier, kNone, false, kNone, b1});
  em.setCurrent(b1);
  int r = em.tmp();
  VInstr ld;
  ld.op = Op::Ld;
  ld.space = Space::Shared;
  ld.dst = r;
  ld.src = {h, {}, {}};
  em.emit(ld);
  int b2 = em.newBlock();
  em.terminate(VTerm{TermKind::Barrier, kNone, false, kNone, b2});
  em.setCurrent(b2);
  int nv = em.tmp();
  em.alu(Op::Neg, nv, VOperand::r(v));
  add.src = {h, VOperand::r(nv), {}};
  em.emit(add);
  const auto& d = in.dsts[0];
  if (kind == BarrierKind::RedPopc) {
    QGPU_TRY(dl, c.dest(d));
    em.alu(Op::Mov, dl.lo, VOperand::r(r));
    c.writeHi(dl, VOperand::i(0));
    return Ok{};
  }
  QGPU_TRY(dp, c.predOf(d));
  if (kind == BarrierKind::RedAnd) em.cmp(Op::SetEq, dp, VOperand::r(r), VOperand::s(Special::NtidX));
  else em.cmp(Op::SetNe, dp, VOperand::r(r), VOperand::i(0));
  return Ok{};
}

}  // namespace

Status translateWarp(Ctx& c) {
  switch (c.in->op) {
    case ptx::Opcode::Shfl: return shfl(c);
    case ptx::Opcode::Vote: return vote(c);
    case ptx::Opcode::Activemask: return activemask(c);
    default: break;
  }
  BarrierKind k = c.in->mods.barrier;
  if (k == BarrierKind::Warp) return Ok{};  // a warp only ever runs its active lanes together
  if (k == BarrierKind::RedPopc || k == BarrierKind::RedAnd || k == BarrierKind::RedOr) return barRed(c, k);
  return c.unsupported("barrier form");  // block barriers are terminators (translate.cpp)
}

}  // namespace qgpu::lower::tr
